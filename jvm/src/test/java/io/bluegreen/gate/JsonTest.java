package io.bluegreen.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;

final class JsonTest {
    @Test
    @DisplayName("json: objects, arrays, strings with escapes, numbers, literals")
    void objectsArraysStringsEscapesNumbersLiterals() throws Exception {
        Object v = Json.parse(" {\"a\": [1, -2.5e3, true, false, null], \"b\\u0041\": \"x\\n\\\"y\\\"\"} ");
        Map<?, ?> m = (Map<?, ?>) v;
        assertEquals(5, ((List<?>) m.get("a")).size(), "array size");
        assertEquals("x\n\"y\"", m.get("bA"), "escaped string");
    }

    @Test
    @DisplayName("json: malformed documents are rejected")
    void malformedDocumentsAreRejected() throws Exception {
        for (String bad : new String[] {"", "{", "{\"a\":1,}", "[1 2]", "{\"a\":1}x", "\"\u0001\"", "01", "{\"a\":1,\"a\":2}"}) {
            assertThrows(IllegalArgumentException.class, () -> Json.parse(bad));
        }
    }

    @Test
    @DisplayName("json: writeStringMap round-trips")
    void writestringmapRoundTrips() throws Exception {
        Map<String, String> m = new java.util.TreeMap<>(Map.of("k\"", "v\\\n", "x", ""));
        assertEquals(m, ProtocolVectorsTest.strings(Json.parse(Json.writeStringMap(m))), "round trip");
    }
}
