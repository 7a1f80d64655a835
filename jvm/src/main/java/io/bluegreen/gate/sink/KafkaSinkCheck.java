package io.bluegreen.gate.sink;

import io.bluegreen.gate.Color;
import java.lang.reflect.Field;
import org.apache.flink.api.connector.sink2.Sink;

/**
 * Checks, when the job is built, the Kafka connector's {@code KafkaSink} (found by class name: the
 * gate does not depend on the connector). With {@code DeliveryGuarantee.EXACTLY_ONCE} its
 * transactional id prefix must be per color: on start, a writer aborts the lingering transactions
 * {@code <prefix>-<subtask>-<checkpoint id>} above the checkpoint it restored, which with one
 * prefix for both colors are the other color's open transactions (both jobs fenced and failing
 * over, tests/tests/real_kafka.rs). {@code KafkaSink} exposes neither setting, so both are read
 * reflectively from its fields {@code deliveryGuarantee} and {@code transactionalIdPrefix}
 * (connector 3.4.0-1.20 and 5.0.0-2.2); a connector where that fails is refused too.
 */
final class KafkaSinkCheck {
    static final String KAFKA_SINK = "org.apache.flink.connector.kafka.sink.KafkaSink";

    private KafkaSinkCheck() {}

    /** Whether {@code sink} is a {@code KafkaSink} (or extends it). */
    static boolean isKafkaSink(Sink<?> sink) {
        for (Class<?> c = sink.getClass(); c != null; c = c.getSuperclass()) {
            if (c.getName().equals(KAFKA_SINK)) {
                return true;
            }
        }
        return false;
    }

    /** Refuses an exactly-once {@code KafkaSink} whose prefix is missing or not {@code color}'s. */
    static void check(Sink<?> sink, Color color) {
        Object guarantee = field(sink, "deliveryGuarantee");
        if (!(guarantee instanceof Enum) || !((Enum<?>) guarantee).name().equals("EXACTLY_ONCE")) {
            return;
        }
        Object prefix = field(sink, "transactionalIdPrefix");
        String want = BlueGreenSinks.transactionalIdPrefix("", color);
        if (!(prefix instanceof String) || !((String) prefix).endsWith(want)) {
            throw new IllegalArgumentException("the " + color + " job's KafkaSink transactional id prefix '" + prefix
                    + "' is not per color: the incoming job would abort and fence the outgoing job's transactions"
                    + " (both jobs fail over); use .setTransactionalIdPrefix(BlueGreenSinks.transactionalIdPrefix(base, color))"
                    + " (a prefix ending in '" + want + "')");
        }
    }

    private static Object field(Object target, String name) {
        for (Class<?> c = target.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(target);
            } catch (NoSuchFieldException e) {
                // look in the superclass
            } catch (ReflectiveOperationException | RuntimeException e) {
                throw unreadable(name, e);
            }
        }
        throw unreadable(name, null);
    }

    private static IllegalArgumentException unreadable(String name, Exception cause) {
        return new IllegalArgumentException("cannot read KafkaSink." + name + " to check that its transactional id prefix is"
                + " per color (a Kafka connector other than 3.4.0-1.20 or 5.0.0-2.2?)", cause);
    }
}
