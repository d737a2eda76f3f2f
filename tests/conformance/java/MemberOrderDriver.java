import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.coordinator.group.util.UpdatedMembersAndTargetAssignmentView;
import org.apache.kafka.timeline.SnapshotRegistry;
import org.apache.kafka.timeline.TimelineHashMap;

/**
 * The order Kafka 4.4.0's coordinator hands a streams group's members to its assignor: a group's members live in a
 * TimelineHashMap (`new TimelineHashMap<>(registry, 0)`, as StreamsGroup makes it), the heartbeat's member is laid
 * over it (UpdatedMembersAndTargetAssignmentView), and TargetAssignmentBuilder puts them into a new HashMap.
 * Each stdin line: space-separated operations on the map, "+id" (put) or "-id" (remove), then "|" and the member
 * the heartbeat adds or updates ("-" for none). Prints the HashMap's key order, space-separated.
 */
public class MemberOrderDriver {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] halves = line.split("\\|");
            TimelineHashMap<String, String> members = new TimelineHashMap<>(new SnapshotRegistry(new LogContext()), 0);
            for (String op : halves[0].trim().split(" ")) {
                if (op.isEmpty()) continue;
                if (op.charAt(0) == '+') members.put(op.substring(1), op.substring(1));
                else members.remove(op.substring(1));
            }
            UpdatedMembersAndTargetAssignmentView<String, String> view =
                new UpdatedMembersAndTargetAssignmentView<>(members, new HashMap<>(), new HashMap<>(), m -> null);
            String updated = halves[1].trim();
            if (!updated.equals("-")) view.addOrUpdateMember(updated, updated);
            Map<String, String> spec = new HashMap<>();
            view.members().forEach(spec::put);
            System.out.println(String.join(" ", spec.keySet()) + " ;" + String.join(" ", view.members().keySet()));
        }
    }
}
