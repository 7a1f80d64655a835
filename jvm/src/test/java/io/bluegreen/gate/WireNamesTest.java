package io.bluegreen.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Stream;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

/**
 * protocol/vectors/wire-names.json, the list of wire names that bluegreen_protocol::wire defines
 * (checked against it by protocol/tests/wire_names.rs): every Java constant it names holds the
 * same value, and every metric name of the Java library ({@code GateProcessFunction.METRIC_*})
 * is in it.
 */
final class WireNamesTest {
    /** The Java constants wire-names.json names. */
    static Set<String> named() {
        Set<String> named = new TreeSet<>();
        for (Map<String, Object> c : ProtocolVectorsTest.cases("wire-names.json")) {
            if (c.get("java") != null) {
                named.add((String) c.get("java"));
            }
        }
        return named;
    }

    /** One test per wire name that names a Java constant. */
    @TestFactory
    Stream<DynamicTest> constants() {
        List<Map<String, Object>> cases = ProtocolVectorsTest.cases("wire-names.json");
        assertTrue(!cases.isEmpty(), "wire-names.json has no cases");
        List<DynamicTest> tests = new java.util.ArrayList<>();
        for (Map<String, Object> c : cases) {
            String rust = (String) c.get("name");
            String value = (String) c.get("value");
            String java = (String) c.get("java");
            if (java == null) {
                continue;
            }
            tests.add(DynamicTest.dynamicTest("vector wire names: " + java + " is " + rust, () -> assertEquals(value, constant(java), java)));
        }
        return tests.stream();
    }

    @Test
    @DisplayName("vector wire names: every GateProcessFunction.METRIC_* is pinned")
    void everyMetricIsPinned() {
        Set<String> named = named();
        int metrics = 0;
        for (Field f : GateProcessFunction.class.getFields()) {
            if (f.getName().startsWith("METRIC_")) {
                metrics++;
                String ref = "GateProcessFunction." + f.getName();
                assertTrue(named.contains(ref), ref + " is not in protocol/vectors/wire-names.json");
            }
        }
        long pinned = named.stream().filter(n -> n.startsWith("GateProcessFunction.METRIC_")).count();
        assertEquals((long) metrics, pinned, "metric constants pinned");
    }

    /** The value of the public static final String {@code Class.FIELD} of io.bluegreen.gate. */
    static String constant(String ref) throws Exception {
        int dot = ref.lastIndexOf('.');
        Class<?> owner = Class.forName("io.bluegreen.gate." + ref.substring(0, dot));
        Field f = owner.getField(ref.substring(dot + 1));
        int mods = f.getModifiers();
        assertTrue(Modifier.isStatic(mods) && Modifier.isFinal(mods) && f.getType() == String.class,
                ref + " is a static final String");
        return (String) f.get(null);
    }
}
