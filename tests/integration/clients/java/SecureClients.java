import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/** The Java client over SASL_SSL and mTLS: each case prints "case<TAB>ok<TAB>detail" or "case<TAB>error<TAB>class: message". */
public class SecureClients {
    public static void main(String[] args) throws Exception {
        String saslSsl = args[0], ssl = args[1], ca = args[2], clientKeystore = args[3], oauthSaslSsl = args[4];
        for (String mechanism : new String[] {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}) {
            run("produce-" + mechanism, sasl(saslSsl, ca, mechanism, "alice-secret"));
        }
        run("wrong-password-SCRAM-SHA-512", sasl(saslSsl, ca, "SCRAM-SHA-512", "wrong"));
        run("wrong-password-PLAIN", sasl(saslSsl, ca, "PLAIN", "wrong"));
        Properties mtls = base(ssl, ca, "SSL");
        mtls.put("ssl.keystore.type", "PEM");
        mtls.put("ssl.keystore.location", clientKeystore);
        run("produce-mTLS", mtls);
        // an unsigned token naming any principal: refused unless the broker's operator named the unsecured validator
        run("unsigned-OAUTHBEARER-refused", unsigned(saslSsl, ca));
        run("unsigned-OAUTHBEARER-opted-in", unsigned(oauthSaslSsl, ca));
    }

    static Properties unsigned(String bootstrap, String ca) {
        Properties p = base(bootstrap, ca, "SASL_SSL");
        p.put("sasl.mechanism", "OAUTHBEARER");  // the client's default login handler makes an unsecured token
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
                + "unsecuredLoginStringClaim_sub=\"admin\";");
        return p;
    }

    static Properties base(String bootstrap, String ca, String protocol) {
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("security.protocol", protocol);
        p.put("ssl.truststore.type", "PEM");
        p.put("ssl.truststore.location", ca);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("max.block.ms", "10000");
        return p;
    }

    static Properties sasl(String bootstrap, String ca, String mechanism, String password) {
        Properties p = base(bootstrap, ca, "SASL_SSL");
        p.put("sasl.mechanism", mechanism);
        String module = mechanism.equals("PLAIN") ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
        p.put("sasl.jaas.config", module + " required username=\"alice\" password=\"" + password + "\";");
        return p;
    }

    static void run(String name, Properties props) {
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(props)) {
            long offset = producer.send(new ProducerRecord<>("java-secure", name, "v")).get(15, TimeUnit.SECONDS).offset();
            System.out.println(name + "\tok\toffset " + offset);
        } catch (ExecutionException e) {
            Throwable c = e.getCause();
            System.out.println(name + "\terror\t" + c.getClass().getName() + ": " + c.getMessage());
        } catch (Exception e) {
            System.out.println(name + "\terror\t" + e.getClass().getName() + ": " + e.getMessage());
        }
    }
}
