import sys

from fakekafka.ops.cli import main

sys.exit(main())
