import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.PartitionInfo;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * The Kafka side of the test bed, with nothing of Flink: plain Kafka clients only
 * (examples/src/kafka/broker.rs runs it on the broker's class path, target/kafka/VERSION/libs).
 *
 * <pre>
 * KafkaTool create-topics BOOTSTRAP TOPIC:PARTITIONS...   waits up to 60 s for the broker, creates the topics
 * KafkaTool produce BOOTSTRAP TOPIC PARTITIONS RATE T0 JITTER_MS SEED KEYS_PER_SPLIT
 *     the input: record o of partition p (o = 0, 1, ...; its id, equal to its offset) is written at
 *     wall-clock t0 + o * 1000 / RATE, with value "p,o,eventTime,key" and timestamp eventTime =
 *     that schedule + a jitter in [-JITTER_MS, JITTER_MS] (a hash of SEED, p, o), key p * K + o % K;
 *     runs until killed
 * KafkaTool read BOOTSTRAP TOPIC read_committed|read_uncommitted
 *     the oracle: every record of every partition up to the end offsets at its start (the last
 *     stable offsets for read_committed), one value per line on stdout
 * KafkaTool follow BOOTSTRAP TOPIC
 *     a read_committed consumer from the start of every partition, polling until killed: one
 *     "epochMs value" line per record, epochMs the wall-clock time the poll returned it (when it
 *     became visible, within fetch.max.wait.ms = 20), flushed after every poll
 * KafkaTool end-offsets BOOTSTRAP TOPIC   "partition endOffset" lines
 * KafkaTool watch-lag BOOTSTRAP TOPIC PERIOD_MS
 *     the read_committed lag: every PERIOD_MS, one "epochMs partition lastStableOffset highWatermark"
 *     line per partition (the admin API's latest offsets read_committed and read_uncommitted; they
 *     differ by what open transactions wrote), flushed at once; runs until killed
 * </pre>
 */
public final class KafkaTool {
    private KafkaTool() {}

    public static void main(String[] a) throws Exception {
        if (a.length < 3) {
            usage();
        }
        switch (a[0]) {
            case "create-topics":
                createTopics(a);
                break;
            case "produce":
                if (a.length != 9) {
                    usage();
                }
                produce(a[1], a[2], Integer.parseInt(a[3]), Long.parseLong(a[4]), Long.parseLong(a[5]),
                        Long.parseLong(a[6]), Long.parseLong(a[7]), Long.parseLong(a[8]));
                break;
            case "read":
                if (a.length != 4) {
                    usage();
                }
                read(a[1], a[2], a[3]);
                break;
            case "follow":
                follow(a[1], a[2]);
                break;
            case "end-offsets":
                endOffsets(a[1], a[2]);
                break;
            case "watch-lag":
                if (a.length != 4) {
                    usage();
                }
                watchLag(a[1], a[2], Long.parseLong(a[3]));
                break;
            default:
                usage();
        }
    }

    private static void usage() {
        System.err.println("usage: KafkaTool create-topics|produce|read|follow|end-offsets|watch-lag BOOTSTRAP ... (see its javadoc)");
        System.exit(2);
    }

    private static void createTopics(String[] a) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, a[1]);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
        try (Admin admin = Admin.create(p)) {
            List<NewTopic> topics = new ArrayList<>();
            for (int i = 2; i < a.length; i++) {
                String[] tp = a[i].split(":");
                topics.add(new NewTopic(tp[0], Integer.parseInt(tp[1]), (short) 1));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            for (NewTopic t : topics) {
                while (true) {
                    try {
                        admin.createTopics(List.of(t)).all().get(30, TimeUnit.SECONDS);
                        break;
                    } catch (ExecutionException e) {
                        if (e.getCause() instanceof TopicExistsException) {
                            break;
                        }
                        if (System.nanoTime() > deadline) {
                            throw e;
                        }
                        Thread.sleep(500);
                    }
                }
            }
            System.out.println("created " + topics.size() + " topics");
        }
    }

    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
        z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
        return z ^ (z >>> 31);
    }

    private static void produce(String bootstrap, String topic, int partitions, long rate, long t0, long jitterMs,
            long seed, long keysPerSplit) throws Exception {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        long periodMicros = 1_000_000L / rate;
        long[] next = new long[partitions];
        long reported = System.currentTimeMillis();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            while (true) {
                long now = System.currentTimeMillis();
                for (int s = 0; s < partitions; s++) {
                    while (t0 + next[s] * periodMicros / 1000 <= now) {
                        long o = next[s]++;
                        long schedule = t0 + o * periodMicros / 1000;
                        long h = mix(seed ^ (s * 0x9E3779B97F4A7C15L) ^ (o * 0xC2B2AE3D27D4EB4FL));
                        long eventTime = jitterMs == 0 ? schedule : schedule + Math.floorMod(h, 2 * jitterMs + 1) - jitterMs;
                        long key = s * keysPerSplit + o % keysPerSplit;
                        producer.send(new ProducerRecord<>(topic, s, eventTime, Long.toString(key),
                                s + "," + o + "," + eventTime + "," + key), (md, e) -> {
                                    if (e != null) {
                                        e.printStackTrace();
                                        System.exit(1);
                                    }
                                });
                    }
                }
                if (now - reported >= 10_000) {
                    reported = now;
                    System.err.println("produced " + java.util.Arrays.toString(next));
                }
                Thread.sleep(5);
            }
        }
    }

    private static KafkaConsumer<String, String> consumer(String bootstrap, String isolation) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        // A fetch waits at most this long for records (follow: how late a visible record may be seen).
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, "20");
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(p);
    }

    private static List<TopicPartition> partitions(KafkaConsumer<?, ?> c, String topic) {
        List<TopicPartition> tps = new ArrayList<>();
        for (PartitionInfo info : c.partitionsFor(topic, Duration.ofSeconds(30))) {
            tps.add(new TopicPartition(topic, info.partition()));
        }
        return tps;
    }

    private static void read(String bootstrap, String topic, String isolation) {
        if (!isolation.equals("read_committed") && !isolation.equals("read_uncommitted")) {
            usage();
        }
        try (KafkaConsumer<String, String> c = consumer(bootstrap, isolation)) {
            List<TopicPartition> tps = partitions(c, topic);
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = new HashMap<>(c.endOffsets(tps, Duration.ofSeconds(30)));
            long n = 0;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            StringBuilder out = new StringBuilder();
            while (end.entrySet().stream().anyMatch(e -> c.position(e.getKey(), Duration.ofSeconds(30)) < e.getValue())) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("not caught up with " + end + " within 120 s");
                }
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    out.append(r.value()).append('\n');
                    n++;
                }
            }
            System.out.print(out);
            System.out.flush();
            System.err.println("read " + n + " records (" + isolation + ") up to " + end);
        }
    }

    private static void follow(String bootstrap, String topic) {
        try (KafkaConsumer<String, String> c = consumer(bootstrap, "read_committed")) {
            List<TopicPartition> tps = partitions(c, topic);
            c.assign(tps);
            c.seekToBeginning(tps);
            while (true) {
                ConsumerRecords<String, String> records = c.poll(Duration.ofMillis(100));
                if (records.isEmpty()) {
                    continue;
                }
                long now = System.currentTimeMillis();
                StringBuilder out = new StringBuilder();
                for (ConsumerRecord<String, String> r : records) {
                    out.append(now).append(' ').append(r.value()).append('\n');
                }
                System.out.print(out);
                System.out.flush();
            }
        }
    }

    private static void endOffsets(String bootstrap, String topic) {
        try (KafkaConsumer<String, String> c = consumer(bootstrap, "read_uncommitted")) {
            List<TopicPartition> tps = partitions(c, topic);
            for (Map.Entry<TopicPartition, Long> e : c.endOffsets(tps, Duration.ofSeconds(30)).entrySet()) {
                System.out.println(e.getKey().partition() + " " + e.getValue());
            }
        }
    }

    private static Map<TopicPartition, Long> latest(Admin admin, Map<TopicPartition, OffsetSpec> specs,
            IsolationLevel isolation) throws Exception {
        Map<TopicPartition, Long> out = new HashMap<>();
        for (Map.Entry<TopicPartition, ListOffsetsResult.ListOffsetsResultInfo> e : admin
                .listOffsets(specs, new ListOffsetsOptions(isolation)).all().get(30, TimeUnit.SECONDS).entrySet()) {
            out.put(e.getKey(), e.getValue().offset());
        }
        return out;
    }

    private static void watchLag(String bootstrap, String topic, long periodMs) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "30000");
        try (Admin admin = Admin.create(p)) {
            int partitions = admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic)
                    .partitions().size();
            Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
            for (int i = 0; i < partitions; i++) {
                specs.put(new TopicPartition(topic, i), OffsetSpec.latest());
            }
            while (true) {
                long now = System.currentTimeMillis();
                Map<TopicPartition, Long> stable = latest(admin, specs, IsolationLevel.READ_COMMITTED);
                Map<TopicPartition, Long> high = latest(admin, specs, IsolationLevel.READ_UNCOMMITTED);
                StringBuilder out = new StringBuilder();
                for (int i = 0; i < partitions; i++) {
                    TopicPartition tp = new TopicPartition(topic, i);
                    out.append(now).append(' ').append(i).append(' ').append(stable.get(tp)).append(' ')
                            .append(high.get(tp)).append('\n');
                }
                System.out.print(out);
                System.out.flush();
                Thread.sleep(Math.max(0, periodMs - (System.currentTimeMillis() - now)));
            }
        }
    }
}
