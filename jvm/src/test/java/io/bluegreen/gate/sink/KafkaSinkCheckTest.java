package io.bluegreen.gate.sink;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.bluegreen.gate.Color;
import org.apache.flink.api.common.serialization.SimpleStringSchema;
import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.connector.base.DeliveryGuarantee;
import org.apache.flink.connector.kafka.sink.KafkaRecordSerializationSchema;
import org.apache.flink.connector.kafka.sink.KafkaSink;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

/**
 * {@link ColorIsolatedSink#wrap} on the Kafka connector's real {@link KafkaSink} (3.4.0-1.20, or
 * 5.0.0-2.2 under {@code -Pflink2}); building a {@code KafkaSink} does not connect, no broker runs.
 */
public final class KafkaSinkCheckTest {
    private static KafkaSink<String> kafka(DeliveryGuarantee guarantee, String prefix) {
        var builder = KafkaSink.<String>builder()
                .setBootstrapServers("127.0.0.1:9")
                .setRecordSerializer(KafkaRecordSerializationSchema.builder()
                        .setTopic("out")
                        .setValueSerializationSchema(new SimpleStringSchema())
                        .build())
                .setDeliveryGuarantee(guarantee);
        if (prefix != null) {
            builder.setTransactionalIdPrefix(prefix);
        }
        return builder.build();
    }

    @Test
    @DisplayName("kafka check: an EXACTLY_ONCE KafkaSink with a per-color prefix is wrapped (both Flink lines)")
    void perColorPrefixIsWrapped() {
        for (Color color : Color.values()) {
            Sink<String> wrapped = ColorIsolatedSink.wrap(
                    kafka(DeliveryGuarantee.EXACTLY_ONCE, BlueGreenSinks.transactionalIdPrefix("orders", color)), color);
            assertInstanceOf(ColorIsolatedSink.class, wrapped);
        }
    }

    @Test
    @DisplayName("kafka check: an EXACTLY_ONCE KafkaSink with one prefix for both colors is refused, naming the fix")
    void sharedPrefixIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ColorIsolatedSink.wrap(kafka(DeliveryGuarantee.EXACTLY_ONCE, "orders-shared"), Color.GREEN));
        assertTrue(e.getMessage().contains("'orders-shared' is not per color"), e.getMessage());
        assertTrue(e.getMessage().contains("BlueGreenSinks.transactionalIdPrefix(base, color)"), e.getMessage());
    }

    @Test
    @DisplayName("kafka check: an EXACTLY_ONCE KafkaSink with the other color's prefix is refused")
    void otherColorsPrefixIsRefused() {
        String blue = BlueGreenSinks.transactionalIdPrefix("orders", Color.BLUE);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> ColorIsolatedSink.wrap(kafka(DeliveryGuarantee.EXACTLY_ONCE, blue), Color.GREEN));
        assertTrue(e.getMessage().contains("is not per color"), e.getMessage());
    }

    @Test
    @DisplayName("kafka check: an AT_LEAST_ONCE KafkaSink needs no prefix")
    void atLeastOnceNeedsNoPrefix() {
        ColorIsolatedSink.wrap(kafka(DeliveryGuarantee.AT_LEAST_ONCE, null), Color.BLUE);
    }
}
