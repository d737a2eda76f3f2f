import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.coordinator.group.api.streams.assignor.GroupAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.streams.assignor.TopologyDescriber;
import org.apache.kafka.coordinator.group.streams.assignor.AssignmentConfigsImpl;
import org.apache.kafka.coordinator.group.streams.assignor.GroupSpecImpl;
import org.apache.kafka.coordinator.group.streams.assignor.MemberMetadataAndStateImpl;
import org.apache.kafka.coordinator.group.streams.assignor.StickyTaskAssignor;

/**
 * Runs Kafka 4.4.0's own streams StickyTaskAssignor on cases read from stdin, one line per fact:
 * "case <num.standby.replicas>", "sub <id> <partitions> <0|1 stateful>", "member <id> <process id>" (in the order
 * Kafka's TargetAssignmentBuilder would put them into its HashMap), "active|standby <member> <sub> <partition>",
 * "offset <member> <sub> <partition> <offset sum>", "end". Prints "A|S <member> <sub> <partition>" lines, then "end".
 */
public class StickyAssignorDriver {
    private static final class Member {
        final String processId;
        final Map<String, Set<Integer>> active = new HashMap<>();
        final Map<String, Set<Integer>> standby = new HashMap<>();
        final Map<String, Map<Integer, Long>> offsets = new HashMap<>();

        Member(String processId) {
            this.processId = processId;
        }
    }

    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        int standbys = 0;
        TreeMap<String, Integer> partitions = new TreeMap<>();
        Set<String> stateful = new HashSet<>();
        List<String> order = new ArrayList<>();
        Map<String, Member> members = new HashMap<>();
        String line;
        while ((line = in.readLine()) != null) {
            String[] f = line.trim().split(" ");
            switch (f[0]) {
                case "case":
                    standbys = Integer.parseInt(f[1]);
                    partitions.clear();
                    stateful.clear();
                    order.clear();
                    members.clear();
                    break;
                case "sub":
                    partitions.put(f[1], Integer.parseInt(f[2]));
                    if (f[3].equals("1")) stateful.add(f[1]);
                    break;
                case "member":
                    order.add(f[1]);
                    members.put(f[1], new Member(f[2]));
                    break;
                case "active":
                    members.get(f[1]).active.computeIfAbsent(f[2], k -> new HashSet<>()).add(Integer.parseInt(f[3]));
                    break;
                case "standby":
                    members.get(f[1]).standby.computeIfAbsent(f[2], k -> new HashSet<>()).add(Integer.parseInt(f[3]));
                    break;
                case "offset":
                    members.get(f[1]).offsets.computeIfAbsent(f[2], k -> new HashMap<>())
                        .put(Integer.parseInt(f[3]), Long.parseLong(f[4]));
                    break;
                case "end":
                    run(standbys, partitions, stateful, order, members);
                    break;
                default:
                    throw new IllegalArgumentException("unknown line " + line);
            }
        }
    }

    private static void run(int standbys, TreeMap<String, Integer> partitions, Set<String> stateful,
                            List<String> order, Map<String, Member> members) {
        Map<String, MemberMetadataAndStateImpl> specs = new HashMap<>();
        for (String id : order) {
            Member m = members.get(id);
            specs.put(id, new MemberMetadataAndStateImpl(Optional.empty(), Optional.empty(), m.processId, Map.of(),
                m.active, m.standby, Map.of(), m.offsets, Map.of()));
        }
        TopologyDescriber topology = new TopologyDescriber() {
            @Override
            public List<String> subtopologies() {
                return new ArrayList<>(partitions.keySet());
            }

            @Override
            public int maxNumInputPartitions(String subtopologyId) {
                return partitions.get(subtopologyId);
            }

            @Override
            public boolean isStateful(String subtopologyId) {
                return stateful.contains(subtopologyId);
            }
        };
        GroupAssignment out = new StickyTaskAssignor().assign(
            new GroupSpecImpl(specs, new AssignmentConfigsImpl(standbys, List.of())), topology);
        StringBuilder sb = new StringBuilder();
        for (Map.Entry<String, MemberAssignment> e : out.members().entrySet()) {
            e.getValue().activeTasks().forEach((sub, ps) -> ps.forEach(p ->
                sb.append("A ").append(e.getKey()).append(' ').append(sub).append(' ').append(p).append('\n')));
            e.getValue().standbyTasks().forEach((sub, ps) -> ps.forEach(p ->
                sb.append("S ").append(e.getKey()).append(' ').append(sub).append(' ').append(p).append('\n')));
        }
        sb.append("end\n");
        System.out.print(sb);
        System.out.flush();
    }
}
