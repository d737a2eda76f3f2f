import sys

from fakekafka.cli import main

sys.exit(main())
