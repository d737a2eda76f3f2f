import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.BufferedReader;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.utils.Exit;

/**
 * Runs Kafka's command-line tools (the main classes bin/kafka-*.sh start) one after another in this one JVM, so
 * a test pays for one JVM start rather than one per command.
 *
 * Each line on stdin is a JSON object {"main": class, "args": [...], "stdin": text}; the answer is one JSON line
 * on the real stdout: {"status": exit status, "stdout": ..., "stderr": ...}. The tools end through Kafka's
 * Exit, whose exit procedure here records the status and unwinds the tool with an Error instead of ending the
 * JVM. Several tools catch Throwable around their work and call Exit again (TopicCommand's finally block, then
 * its main), so the first status wins and whatever the tool writes after it is dropped: a real process would
 * have ended there. System.out and System.err are replaced once, before any tool class (or Scala's Console,
 * which keeps the stream it first saw) is loaded, by streams whose target changes per command.
 */
public final class ToolRunner {

    /** Unwinds a tool at its exit, as the process's end would have stopped it. */
    static final class ToolExit extends Error {
        ToolExit() {
            super("tool exited", null, false, false);
        }
    }

    /** An OutputStream whose target changes per command; null drops the bytes (after the tool's exit). */
    static final class Switch extends OutputStream {
        volatile OutputStream target;

        @Override
        public void write(int b) {
            OutputStream t = target;
            if (t != null) {
                try {
                    t.write(b);
                } catch (java.io.IOException e) {
                    throw new RuntimeException(e);
                }
            }
        }

        @Override
        public void write(byte[] b, int off, int len) {
            OutputStream t = target;
            if (t != null) {
                try {
                    t.write(b, off, len);
                } catch (java.io.IOException e) {
                    throw new RuntimeException(e);
                }
            }
        }
    }

    private static volatile Integer status;
    private static final Switch OUT = new Switch();
    private static final Switch ERR = new Switch();

    private static void exited(int code) {
        record(code);
        throw new ToolExit();
    }

    private static void record(int code) {
        synchronized (ToolRunner.class) {
            if (status == null) {
                status = code;
                System.out.flush();
                System.err.flush();
                OUT.target = null;
                ERR.target = null;
            }
        }
    }

    public static void main(String[] args) throws Exception {
        PrintStream protocol = new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);
        PrintStream log = new PrintStream(new FileOutputStream(FileDescriptor.err), true, StandardCharsets.UTF_8);
        System.setOut(new PrintStream(OUT, true, StandardCharsets.UTF_8));
        System.setErr(new PrintStream(ERR, true, StandardCharsets.UTF_8));
        Exit.setExitProcedure((code, message) -> exited(code));
        Exit.setHaltProcedure((code, message) -> exited(code));
        // the console consumer's and producer's hooks would wait at this JVM's end for clients long closed
        Exit.setShutdownHookAdder((name, runnable) -> { });
        ObjectMapper json = new ObjectMapper();
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            JsonNode cmd = json.readTree(line);
            List<String> argv = new ArrayList<>();
            cmd.path("args").forEach(a -> argv.add(a.asText()));
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            ByteArrayOutputStream err = new ByteArrayOutputStream();
            InputStream savedIn = System.in;
            System.setIn(new ByteArrayInputStream(cmd.path("stdin").asText("").getBytes(StandardCharsets.UTF_8)));
            status = null;
            OUT.target = out;
            ERR.target = err;
            long started = System.nanoTime();
            try {
                Method main = Class.forName(cmd.get("main").asText()).getMethod("main", String[].class);
                main.invoke(null, (Object) argv.toArray(new String[0]));
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                if (!(cause instanceof ToolExit)) {
                    // an uncaught exception ends a real JVM with status 1 and its stack trace on stderr
                    cause.printStackTrace(System.err);
                    record(1);
                }
            } catch (ToolExit e) {
                // exited above
            } catch (Throwable t) {
                log.println("ToolRunner could not run " + cmd + ": " + t);
                t.printStackTrace(log);
            } finally {
                System.out.flush();
                System.err.flush();
                OUT.target = null;
                ERR.target = null;
                System.setIn(savedIn);
            }
            ObjectNode result = json.createObjectNode();
            result.put("status", status == null ? 0 : status);
            result.put("stdout", out.toString(StandardCharsets.UTF_8));
            result.put("stderr", err.toString(StandardCharsets.UTF_8));
            result.put("ms", (System.nanoTime() - started) / 1_000_000);
            protocol.println(json.writeValueAsString(result));
        }
    }
}
