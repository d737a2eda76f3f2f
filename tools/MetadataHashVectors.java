// The known vectors of tests/unit/model/test_metadata_hash.py, computed by Kafka 4.4.0's group coordinator itself
// (Utils.computeTopicHash over a KRaft metadata image, Utils.computeGroupHash). Run once against Kafka's jars:
//   CP=$(ls ~/.cache/fakekafka/kafka-4.4.0/lib/*.jar | tr '\n' ':')
//   javac -d /tmp/mhv -cp "$CP" tools/MetadataHashVectors.java && java -cp "$CP:/tmp/mhv" MetadataHashVectors
import java.util.*;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.metadata.*;
import org.apache.kafka.image.*;
import org.apache.kafka.coordinator.common.runtime.*;
import org.apache.kafka.coordinator.group.Utils;

public class MetadataHashVectors {
    public static void main(String[] a) {
        MetadataDelta d = new MetadataDelta.Builder().setImage(MetadataImage.EMPTY).build();
        String[] racks = {null, "rack-b", "rack-a", null, "r\u00e4ck", "\uff5e", "\ud83d\ude00"};
        for (int b = 1; b <= 6; b++) {
            RegisterBrokerRecord r = new RegisterBrokerRecord().setBrokerId(b).setBrokerEpoch(10 + b)
                .setIncarnationId(new Uuid(b, b)).setRack(racks[b]);
            d.replay(r);
        }
        Uuid t1 = new Uuid(0x0123456789abcdefL, 0xfedcba9876543210L);
        Uuid t2 = new Uuid(0x5f1c2a7e9b3d4c60L, 0x8a2e4f6b1c3d5e70L);
        Uuid t3 = new Uuid(-0x1122334455667788L, 0x1L);
        d.replay(new TopicRecord().setName("t1").setTopicId(t1));
        part(d, t1, 0, 1);
        d.replay(new TopicRecord().setName("orders.v2").setTopicId(t2));
        part(d, t2, 0, 1, 2);
        part(d, t2, 1, 2, 3);
        part(d, t2, 2, 3, 1);
        d.replay(new TopicRecord().setName("unicode-racks").setTopicId(t3));
        part(d, t3, 0, 4, 5, 6, 2);
        part(d, t3, 1, 6, 5);
        CoordinatorMetadataImage img = new KRaftCoordinatorMetadataImage(d.apply(MetadataProvenance.EMPTY));
        Map<String, Long> hashes = new TreeMap<>();
        for (String t : List.of("t1", "orders.v2", "unicode-racks", "absent")) {
            long h = Utils.computeTopicHash(t, img);
            hashes.put(t, h);
            System.out.println("topic " + t + " " + h);
        }
        for (int i = 0; i < 3; i++) {
            Uuid id = List.of(t1, t2, t3).get(i);
            System.out.println("id " + id + " " + id.getMostSignificantBits() + " " + id.getLeastSignificantBits());
        }
        System.out.println("group t1 " + Utils.computeGroupHash(Map.of("t1", hashes.get("t1"))));
        System.out.println("group t1+orders.v2 " + Utils.computeGroupHash(Map.of("t1", hashes.get("t1"), "orders.v2", hashes.get("orders.v2"))));
        System.out.println("group all3 " + Utils.computeGroupHash(Map.of("t1", hashes.get("t1"), "orders.v2", hashes.get("orders.v2"), "unicode-racks", hashes.get("unicode-racks"))));
        System.out.println("group empty " + Utils.computeGroupHash(Map.of()));
    }

    static void part(MetadataDelta d, Uuid t, int p, int... replicas) {
        List<Integer> rs = new ArrayList<>();
        for (int r : replicas) rs.add(r);
        d.replay(new PartitionRecord().setTopicId(t).setPartitionId(p).setReplicas(rs).setIsr(rs)
            .setLeader(replicas[0]).setLeaderEpoch(0).setPartitionEpoch(0));
    }
}
