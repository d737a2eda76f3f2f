import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import org.apache.kafka.common.utils.Exit;
import org.apache.kafka.tools.AclCommand;

/**
 * Runs bin/kafka-acls.sh's main class (org.apache.kafka.tools.AclCommand) once per command in one JVM: the arguments
 * are the commands' arguments separated by "--next". For each prints "### exit <status>" and what the tool wrote
 * (stdout and stderr, in order). An exit the tool asks for ends that command only.
 */
public class AclCli {
    static final class ExitCalled extends RuntimeException {
        final int status;
        ExitCalled(int status) { super(null, null, false, false); this.status = status; }
    }

    public static void main(String[] args) {
        Exit.setExitProcedure((status, message) -> { throw new ExitCalled(status); });
        List<List<String>> commands = new ArrayList<>();
        commands.add(new ArrayList<>());
        for (String arg : args) {
            if (arg.equals("--next")) commands.add(new ArrayList<>());
            else commands.get(commands.size() - 1).add(arg);
        }
        PrintStream out = System.out, err = System.err;
        for (List<String> command : commands) {
            ByteArrayOutputStream captured = new ByteArrayOutputStream();
            PrintStream both = new PrintStream(captured, true, StandardCharsets.UTF_8);
            System.setOut(both);
            System.setErr(both);
            int status = 0;
            try {
                AclCommand.main(command.toArray(new String[0]));
            } catch (ExitCalled e) {
                status = e.status;
            } catch (Throwable t) {
                status = 99;
                both.println("uncaught " + t);
            } finally {
                System.setOut(out);
                System.setErr(err);
            }
            out.println("### exit " + status + " " + String.join(" ", command.subList(Math.min(4, command.size()), command.size())));
            out.print(captured.toString(StandardCharsets.UTF_8));
        }
        out.flush();
    }
}
