package io.bluegreen.examples;

import io.bluegreen.gate.Color;
import io.bluegreen.gate.GateProcessFunction;
import io.bluegreen.gate.GateSinkWrapper;
import io.bluegreen.gate.sink.BlueGreenSinks;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Properties;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.apache.flink.connector.kafka.sink.KafkaSinkBuilder;
import org.apache.flink.connector.kafka.source.KafkaSource;
import org.apache.flink.connector.kafka.source.enumerator.initializer.OffsetsInitializer;
import org.apache.flink.connector.kafka.source.reader.deserializer.KafkaRecordDeserializationSchema;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.util.Collector;
import org.apache.kafka.clients.consumer.ConsumerRecord;

/**
 * The example job's Kafka shape ({@code --topology kafka}): {@link KafkaSource} (every partition of
 * the input topic from the earliest offset, offsets in the checkpoints and savepoints) → keyed
 * running count → the gate → an exactly-once {@link KafkaSink} with a per-color transactional id
 * prefix ({@link BlueGreenSinks#transactionalIdPrefix}), as docs/jvm.md tells users.
 *
 * <p>An input record's value is {@code partition,id,eventTime,key} (the test bed's producer writes
 * record {@code id} of a partition at offset {@code id}, with Kafka timestamp {@code eventTime}); the
 * output lines are the file output's, {@code split,offset,eventTime,key,count,color,version,value}
 * with split = partition and offset = id.
 */
final class KafkaShape {
    private KafkaShape() {}

    /**
     * The transactional id prefix of {@code mode}: per color (safe), or one for both colors
     * ({@code shared}, refused by {@link BlueGreenSinks#sinkTo} at job build; {@code
     * shared-unchecked}, the gate placed before the unwrapped sink to show the damage).
     */
    static String prefix(String mode, Color color) {
        switch (mode) {
            case "per-color":
                return BlueGreenSinks.transactionalIdPrefix("orders", color);
            case "shared":
            case "shared-unchecked":
                return "orders-shared";
            default:
                throw new IllegalArgumentException(
                        "--transactional-id-prefix must be per-color, shared or shared-unchecked, got '" + mode + "'");
        }
    }

    static DataStream<Event> source(StreamExecutionEnvironment env, String bootstrap, String topic, Color color,
            long outOfOrdernessMs, long idlenessMs) {
        KafkaSource<Event> source = KafkaSource.<Event>builder()
                .setBootstrapServers(bootstrap)
                .setTopics(topic)
                .setGroupId("bluegreen-example-" + color.name().toLowerCase(java.util.Locale.ROOT))
                .setStartingOffsets(OffsetsInitializer.earliest())
                .setDeserializer(new Parse())
                .build();
        WatermarkStrategy<Event> watermarks = WatermarkStrategy
                .<Event>forBoundedOutOfOrderness(Duration.ofMillis(outOfOrdernessMs))
                .withTimestampAssigner((e, ts) -> e.eventTime)
                .withIdleness(Duration.ofMillis(idlenessMs));
        return env.fromSource(source, watermarks, "kafka-source").uid("kafka-source");
    }

    /**
     * The sink: {@code naming} ({@code incrementing} or {@code pooling}, null for the connector's
     * default) and {@code transactionTimeoutMs}, the producers' {@code transaction.timeout.ms}: below
     * the broker's {@code transaction.max.timeout.ms} (15 min by default), above a checkpoint
     * interval plus a handover.
     */
    static void sink(DataStream<String> lines, GateProcessFunction<String> gate, String bootstrap, String topic,
            String prefixMode, Color color, String naming, long transactionTimeoutMs) {
        String transactionalIdPrefix = prefix(prefixMode, color);
        Properties producer = new Properties();
        producer.setProperty("transaction.timeout.ms", Long.toString(transactionTimeoutMs));
        KafkaSinkBuilder<String> builder = KafkaSink.<String>builder()
                .setBootstrapServers(bootstrap)
                .setRecordSerializer(KafkaRecordSerializationSchema.builder()
                        .setTopic(topic)
                        .setValueSerializationSchema(new SimpleStringSchema())
                        .build())
                .setDeliveryGuarantee(DeliveryGuarantee.EXACTLY_ONCE)
                .setTransactionalIdPrefix(transactionalIdPrefix)
                .setKafkaProducerConfig(producer);
        KafkaSink<String> sink = naming(builder, naming).build();
        if (prefixMode.equals("shared-unchecked")) {
            GateSinkWrapper.sinkTo(lines, gate, sink).uid("kafka-sink").name("kafka-sink");
        } else {
            BlueGreenSinks.sinkTo(lines, gate, sink, "kafka-sink");
        }
    }

    /**
     * {@code builder} with {@code setTransactionNamingStrategy(TransactionNamingStrategy.<NAMING>)}.
     * Called reflectively: the enum exists in connector 5.x (Flink 2.x) only, and this source builds
     * on both lines. Connector 3.x (Flink 1.20) names transactions as 5.x's {@code INCREMENTING}
     * does, so {@code incrementing} is accepted there and changes nothing.
     */
    static KafkaSinkBuilder<String> naming(KafkaSinkBuilder<String> builder, String naming) {
        if (naming == null) {
            return builder;
        }
        if (!naming.equals("incrementing") && !naming.equals("pooling")) {
            throw new IllegalArgumentException("--transaction-naming must be incrementing or pooling, got '" + naming + "'");
        }
        Class<?> strategies;
        try {
            strategies = Class.forName("org.apache.flink.connector.kafka.sink.TransactionNamingStrategy");
        } catch (ClassNotFoundException e) {
            if (naming.equals("incrementing")) {
                return builder;
            }
            throw new IllegalArgumentException("--transaction-naming " + naming + " needs flink-connector-kafka 5.x (Flink 2.x):"
                    + " this connector has no TransactionNamingStrategy", e);
        }
        try {
            @SuppressWarnings({"unchecked", "rawtypes"})
            Object strategy = Enum.valueOf((Class) strategies, naming.toUpperCase(java.util.Locale.ROOT));
            builder.getClass().getMethod("setTransactionNamingStrategy", strategies).invoke(builder, strategy);
            return builder;
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("KafkaSinkBuilder.setTransactionNamingStrategy failed", e);
        }
    }

    /** {@code partition,id,eventTime,key} into an uncounted {@link Event}. */
    static final class Parse implements KafkaRecordDeserializationSchema<Event> {
        private static final long serialVersionUID = 1L;

        @Override
        public void deserialize(ConsumerRecord<byte[], byte[]> record, Collector<Event> out) {
            String value = new String(record.value(), StandardCharsets.UTF_8);
            String[] f = value.split(",");
            if (f.length != 4) {
                throw new IllegalArgumentException("input record " + record.partition() + "@" + record.offset()
                        + " is not 'partition,id,eventTime,key': " + value);
            }
            Event e = new Event();
            e.split = Integer.parseInt(f[0]);
            e.offset = Long.parseLong(f[1]);
            e.eventTime = Long.parseLong(f[2]);
            e.key = Long.parseLong(f[3]);
            out.collect(e);
        }

        @Override
        public TypeInformation<Event> getProducedType() {
            return TypeInformation.of(Event.class);
        }
    }
}
