package io.bluegreen.gate;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/**
 * A property test of {@link Json} against the Rust parser: every case of
 * protocol/vectors/json-cases.json (hand-written edge cases, random documents and random edits of
 * them and of the protocol's ConfigMaps, generated with a fixed seed by
 * protocol/tests/json_cases.rs) must be accepted or refused as the Rust side does, with the same
 * value; ConfigMap data must give the same state or the same protocol error (kind and key).
 */
final class JsonCasesTest {
    /** How deep the case file itself nests. */
    private static final int FILE_DEPTH = 4 * Json.MAX_DEPTH;

    /** Disagreements listed in a failure message. */
    private static final int SHOWN = 5;

    /** Two tests (their names carry the case counts): the documents, the ConfigMaps. */
    @TestFactory
    @SuppressWarnings("unchecked")
    Stream<DynamicTest> jsonCases() {
        Map<String, Object> doc;
        try {
            // The expected values of the deepest documents nest three levels per object level.
            doc = (Map<String, Object>) Json.parse(Files.readString(
                    ProtocolVectorsTest.repo().resolve("protocol/vectors/json-cases.json"), StandardCharsets.UTF_8),
                    FILE_DEPTH);
        } catch (IOException e) {
            throw new RuntimeException("cannot read json-cases.json (run from the repository root)", e);
        }
        List<Map<String, Object>> documents = (List<Map<String, Object>>) doc.get("documents");
        List<Map<String, Object>> configmaps = (List<Map<String, Object>>) doc.get("configmaps");
        DynamicTest documentCases = DynamicTest.dynamicTest("json cases: " + documents.size() + " documents read as the Rust parser reads them", () -> {
            assertTrue(documents.size() >= 700, "json-cases.json has " + documents.size() + " documents");
            List<String> disagreements = new ArrayList<>();
            for (Map<String, Object> c : documents) {
                String input = (String) c.get("input");
                String why = document(input, c.get("expect"));
                if (why != null) {
                    disagreements.add(show(input) + ": " + why);
                }
            }
            assertTrue(disagreements.isEmpty(), summary(disagreements, documents.size()));
        });
        DynamicTest configmapCases = DynamicTest.dynamicTest("json cases: " + configmaps.size() + " ConfigMaps parse to the Rust state or error", () -> {
            assertTrue(configmaps.size() >= 200, "json-cases.json has " + configmaps.size() + " configmaps");
            List<String> disagreements = new ArrayList<>();
            for (Map<String, Object> c : configmaps) {
                String input = (String) c.get("input");
                String why = configmap(input, (Map<String, Object>) c.get("expect"));
                if (why != null) {
                    disagreements.add(show(input) + ": " + why);
                }
            }
            assertTrue(disagreements.isEmpty(), summary(disagreements, configmaps.size()));
        });
        return Stream.of(documentCases, configmapCases);
    }

    private static String summary(List<String> disagreements, int cases) {
        return disagreements.size() + " of " + cases + " cases disagree with the Rust side, e.g.\n  "
                + String.join("\n  ", disagreements.subList(0, Math.min(SHOWN, disagreements.size())));
    }

    private static String show(String input) {
        StringBuilder b = new StringBuilder();
        Json.writeString(b, input.length() > 80 ? input.substring(0, 80) + "..." : input);
        return b.toString();
    }

    /** Java's reading of {@code input}, compared with the Rust side's; null when they agree. */
    static String document(String input, Object expect) {
        Object actual;
        try {
            actual = Json.parse(input);
        } catch (IllegalArgumentException e) {
            return "error".equals(expect) ? null : "refused (" + e.getMessage() + "), the Rust side reads it";
        } catch (StackOverflowError e) {
            return "stack overflow (the Rust side " + ("error".equals(expect) ? "refuses it" : "reads it") + ")";
        }
        if ("error".equals(expect)) {
            return "accepted, the Rust side refuses it";
        }
        return same(expect, actual, "$");
    }

    @SuppressWarnings("unchecked")
    private static String same(Object expect, Object actual, String path) {
        if (expect == null || expect instanceof Boolean || expect instanceof String) {
            return java.util.Objects.equals(expect, actual) ? null : path + ": " + actual + " instead of " + expect;
        }
        if (expect instanceof List) {
            List<Object> want = (List<Object>) expect;
            if (!(actual instanceof List) || ((List<?>) actual).size() != want.size()) {
                return path + ": " + actual + " instead of an array of " + want.size();
            }
            for (int k = 0; k < want.size(); k++) {
                String why = same(want.get(k), ((List<?>) actual).get(k), path + "[" + k + "]");
                if (why != null) {
                    return why;
                }
            }
            return null;
        }
        Map<String, Object> tagged = (Map<String, Object>) expect;
        if (tagged.containsKey("number")) {
            return number((String) tagged.get("number"), actual, path);
        }
        List<List<Object>> members = (List<List<Object>>) tagged.get("object");
        if (!(actual instanceof Map) || ((Map<?, ?>) actual).size() != members.size()) {
            return path + ": " + actual + " instead of an object of " + members.size() + " members";
        }
        Iterator<? extends Map.Entry<?, ?>> got = ((Map<?, ?>) actual).entrySet().iterator();
        for (List<Object> member : members) {
            Map.Entry<?, ?> e = got.next();
            if (!member.get(0).equals(e.getKey())) {
                return path + ": member " + e.getKey() + " instead of " + member.get(0);
            }
            String why = same(member.get(1), e.getValue(), path + "." + e.getKey());
            if (why != null) {
                return why;
            }
        }
        return null;
    }

    /**
     * Exact for the Rust side's integers ({@code u:}, {@code i:}); for its doubles ({@code f:})
     * within one ulp, because serde_json's default float parsing is not always correctly rounded
     * while {@link BigDecimal#doubleValue()} is.
     */
    private static String number(String tagged, Object actual, String path) {
        if (!(actual instanceof BigDecimal)) {
            return path + ": " + actual + " instead of the number " + tagged;
        }
        BigDecimal got = (BigDecimal) actual;
        String text = tagged.substring(2);
        if (!tagged.startsWith("f:")) {
            return new BigDecimal(text).compareTo(got) == 0 ? null : path + ": " + got + " instead of " + text;
        }
        double want = Double.parseDouble(text);
        double value = got.doubleValue();
        return value == want || Math.abs(value - want) <= Math.ulp(want)
                ? null
                : path + ": " + got + " (" + value + ") instead of " + text;
    }

    /** Java's reading of ConfigMap data sent as JSON, compared with the Rust side's. */
    @SuppressWarnings("unchecked")
    static String configmap(String input, Map<String, Object> expect) {
        Object parsed;
        try {
            parsed = Json.parse(input);
        } catch (IllegalArgumentException | StackOverflowError e) {
            return verdict("json", expect, e.toString());
        }
        if (!(parsed instanceof Map)) {
            return verdict("strings", expect, "not an object");
        }
        Map<String, String> data = new TreeMap<>();
        for (Map.Entry<String, Object> e : ((Map<String, Object>) parsed).entrySet()) {
            if (!(e.getValue() instanceof String)) {
                return verdict("strings", expect, "member " + e.getKey() + " is no string");
            }
            data.put(e.getKey(), (String) e.getValue());
        }
        CoordinationState s;
        try {
            s = CoordinationState.fromData(data);
        } catch (ProtocolException e) {
            Object want = expect.get("error");
            if (!(want instanceof Map)) {
                return "protocol error " + e.kind() + " on " + e.key() + " instead of " + expect;
            }
            Map<String, Object> err = (Map<String, Object>) want;
            return err.get("kind").equals(e.kind().name()) && err.get("key").equals(e.key())
                    ? null
                    : "protocol error " + e.kind() + " on " + e.key() + " instead of " + err;
        }
        Map<String, Object> st = (Map<String, Object>) expect.get("state");
        if (st == null) {
            return "parsed to " + s + " instead of " + expect;
        }
        boolean agree = st.get("active").equals(s.active().wire())
                && st.get("deletion_delay_ms").equals(Long.toUnsignedString(s.deletionDelayMs()))
                && st.get("epoch").equals(Long.toUnsignedString(s.epoch()))
                && st.get("stage").equals(s.stage().wire())
                && st.get("watermark_stage").equals(s.watermarkStage().wire())
                && java.util.Objects.equals(st.get("toggle"), s.hasToggle() ? Long.toString(s.watermarkToggleValue()) : null)
                && java.util.Objects.equals(st.get("floor"), s.hasFloor() ? Long.toString(s.floor()) : null);
        return agree ? null : "parsed to " + s + " instead of " + st;
    }

    private static String verdict(String java, Map<String, Object> expect, String detail) {
        return java.equals(expect.get("error")) ? null : "'" + java + "' error (" + detail + ") instead of " + expect;
    }
}
