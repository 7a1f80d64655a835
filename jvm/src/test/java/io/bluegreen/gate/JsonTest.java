package io.bluegreen.gate;

import static io.bluegreen.gate.TestRunner.checkEq;
import static io.bluegreen.gate.TestRunner.expectThrows;
import static io.bluegreen.gate.TestRunner.test;

import java.util.List;
import java.util.Map;

final class JsonTest {
    private JsonTest() {}

    static void register() {
        test("json: objects, arrays, strings with escapes, numbers, literals", () -> {
            Object v = Json.parse(" {\"a\": [1, -2.5e3, true, false, null], \"b\\u0041\": \"x\\n\\\"y\\\"\"} ");
            Map<?, ?> m = (Map<?, ?>) v;
            checkEq(5, ((List<?>) m.get("a")).size(), "array size");
            checkEq("x\n\"y\"", m.get("bA"), "escaped string");
        });
        test("json: malformed documents are rejected", () -> {
            for (String bad : new String[] {"", "{", "{\"a\":1,}", "[1 2]", "{\"a\":1}x", "\"\u0001\"", "01", "{\"a\":1,\"a\":2}"}) {
                expectThrows(IllegalArgumentException.class, () -> Json.parse(bad));
            }
        });
        test("json: writeStringMap round-trips", () -> {
            Map<String, String> m = new java.util.TreeMap<>(Map.of("k\"", "v\\\n", "x", ""));
            checkEq(m, ProtocolVectorsTest.strings(Json.parse(Json.writeStringMap(m))), "round trip");
        });
        JsonCasesTest.register();
    }
}
