package io.bluegreen.gate;

import static io.bluegreen.gate.TestRunner.check;
import static io.bluegreen.gate.TestRunner.checkEq;
import static io.bluegreen.gate.TestRunner.test;

import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * protocol/vectors/wire-names.json, the list of wire names that bluegreen_protocol::wire defines
 * (checked against it by protocol/tests/wire_names.rs): every Java constant it names holds the
 * same value, and every metric name of the Java library ({@code GateProcessFunction.METRIC_*})
 * is in it.
 */
final class WireNamesTest {
    private WireNamesTest() {}

    static void register() {
        List<Map<String, Object>> cases = ProtocolVectorsTest.cases("wire-names.json");
        check(!cases.isEmpty(), "wire-names.json has no cases");
        Set<String> named = new TreeSet<>();
        for (Map<String, Object> c : cases) {
            String rust = (String) c.get("name");
            String value = (String) c.get("value");
            String java = (String) c.get("java");
            if (java == null) {
                continue;
            }
            named.add(java);
            test("vector wire names: " + java + " is " + rust, () -> checkEq(value, constant(java), java));
        }
        test("vector wire names: every GateProcessFunction.METRIC_* is pinned", () -> {
            int metrics = 0;
            for (Field f : GateProcessFunction.class.getFields()) {
                if (f.getName().startsWith("METRIC_")) {
                    metrics++;
                    String ref = "GateProcessFunction." + f.getName();
                    check(named.contains(ref), ref + " is not in protocol/vectors/wire-names.json");
                }
            }
            long pinned = named.stream().filter(n -> n.startsWith("GateProcessFunction.METRIC_")).count();
            checkEq((long) metrics, pinned, "metric constants pinned");
        });
    }

    /** The value of the public static final String {@code Class.FIELD} of io.bluegreen.gate. */
    static String constant(String ref) throws Exception {
        int dot = ref.lastIndexOf('.');
        Class<?> owner = Class.forName("io.bluegreen.gate." + ref.substring(0, dot));
        Field f = owner.getField(ref.substring(dot + 1));
        int mods = f.getModifiers();
        check(Modifier.isStatic(mods) && Modifier.isFinal(mods) && f.getType() == String.class,
                ref + " is a static final String");
        return (String) f.get(null);
    }
}
