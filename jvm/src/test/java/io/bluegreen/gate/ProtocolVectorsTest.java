package io.bluegreen.gate;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

/** Every case of protocol/vectors/{decisions,configmaps,gate-reports}.json through the Java implementation. */
final class ProtocolVectorsTest {
    static Path repo() {
        return Path.of(System.getProperty("bluegreen.repo", "."));
    }

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> cases(String file) {
        try {
            String text = Files.readString(repo().resolve("protocol/vectors").resolve(file), StandardCharsets.UTF_8);
            Map<String, Object> doc = (Map<String, Object>) Json.parse(text);
            assertTrue(doc.get("description") instanceof String, file + ": description");
            return (List<Map<String, Object>>) doc.get("cases");
        } catch (IOException e) {
            throw new RuntimeException("cannot read the shared vectors (run from the repository root)", e);
        }
    }

    @SuppressWarnings("unchecked")
    static Map<String, String> strings(Object o) {
        Map<String, String> m = new TreeMap<>();
        ((Map<String, Object>) o).forEach((k, v) -> m.put(k, (String) v));
        return m;
    }

    /** One test per case of decisions.json. */
    @TestFactory
    @SuppressWarnings("unchecked")
    Stream<DynamicTest> decisions() {
        List<Map<String, Object>> decisions = cases("decisions.json");
        assertTrue(decisions.size() >= 200, "decisions.json has " + decisions.size() + " cases");
        List<DynamicTest> tests = new java.util.ArrayList<>();
        int n = 0;
        for (Map<String, Object> c : decisions) {
            Color color = Color.fromWire((String) c.get("color"));
            Map<String, String> data = strings(c.get("configmap"));
            List<Map<String, Object>> expect = (List<Map<String, Object>>) c.get("decisions");
            String name = "vector decisions #" + (n++) + " " + color + " " + data.get("stage") + " "
                    + data.get("watermark-stage") + " active=" + data.get("active-deployment-type")
                    + " W=" + data.get("watermark-toggle-value");
            tests.add(DynamicTest.dynamicTest(name, () -> {
                CoordinationState state;
                try {
                    state = CoordinationState.fromData(data);
                } catch (ProtocolException e) {
                    state = null; // a gate with no previous state: a parse error means HOLD
                }
                Rule rule = Rule.forState(state, color);
                Gate gate = new Gate(color, "vector");
                gate.onConfigMap(data);
                for (Map<String, Object> d : expect) {
                    long t = Long.parseLong((String) d.get("event_time"));
                    Decision want = Decision.valueOf((String) d.get("decision"));
                    assertEquals(want, rule.decide(t), "Rule.forState decision at t=" + t);
                    assertEquals(want, Rule.decide(state, color, t), "Rule.decide at t=" + t);
                    assertEquals(want, gate.decide(t), "Gate decision at t=" + t);
                }
            }));
        }
        return tests.stream();
    }

    /** One test per case of configmaps.json. */
    @TestFactory
    @SuppressWarnings("unchecked")
    Stream<DynamicTest> configmaps() {
        List<Map<String, Object>> configmaps = cases("configmaps.json");
        assertTrue(configmaps.size() >= 50, "configmaps.json has " + configmaps.size() + " cases");
        List<DynamicTest> tests = new java.util.ArrayList<>();
        for (Map<String, Object> c : configmaps) {
            Map<String, String> data = strings(c.get("configmap"));
            Map<String, Object> expect = (Map<String, Object>) c.get("expect");
            tests.add(DynamicTest.dynamicTest("vector configmaps: " + c.get("name"), () -> {
                if (expect.containsKey("error")) {
                    Map<String, Object> err = (Map<String, Object>) expect.get("error");
                    ProtocolException e = assertThrows(ProtocolException.class, () -> CoordinationState.fromData(data));
                    assertEquals(err.get("kind"), e.kind().name(), "error kind (" + e.getMessage() + ")");
                    assertEquals(err.get("key"), e.key(), "error key (" + e.getMessage() + ")");
                    assertTrue(e.getMessage().contains("`" + e.key() + "`"), "message names the key: " + e.getMessage());
                } else {
                    Map<String, Object> st = (Map<String, Object>) expect.get("state");
                    CoordinationState s = CoordinationState.fromData(data);
                    assertEquals(st.get("active"), s.active().wire(), "active");
                    assertEquals(st.get("deletion_delay_ms"), Long.toUnsignedString(s.deletionDelayMs()), "deletion delay");
                    assertEquals(st.get("epoch"), Long.toUnsignedString(s.epoch()), "epoch");
                    assertEquals(st.get("stage"), s.stage().wire(), "stage");
                    assertEquals(st.get("watermark_stage"), s.watermarkStage().wire(), "watermark stage");
                    assertEquals(st.get("toggle"), s.hasToggle() ? Long.toString(s.watermarkToggleValue()) : null, "toggle");
                    assertEquals(st.get("floor"), s.hasFloor() ? Long.toString(s.floor()) : null, "floor");
                    // Round trip: the written data parses back to the same state.
                    assertEquals(s, CoordinationState.fromData(s.toData()), "round trip");
                }
            }));
        }
        return tests.stream();
    }

    /** One test per case of gate-reports.json. */
    @TestFactory
    @SuppressWarnings("unchecked")
    Stream<DynamicTest> gateReports() {
        List<Map<String, Object>> reports = cases("gate-reports.json");
        assertTrue(reports.size() >= 20, "gate-reports.json has " + reports.size() + " cases");
        List<DynamicTest> tests = new java.util.ArrayList<>();
        for (Map<String, Object> c : reports) {
            String line = (String) c.get("line");
            Map<String, Object> expect = (Map<String, Object>) c.get("expect");
            tests.add(DynamicTest.dynamicTest("vector gate-reports: " + c.get("name"), () -> {
                if (expect.containsKey("error")) {
                    Map<String, Object> err = (Map<String, Object>) expect.get("error");
                    GateReport.ParseException e = assertThrows(GateReport.ParseException.class, () -> GateReport.parse(line));
                    assertEquals(err.get("kind"), e.kind().name(), "error kind (" + e.getMessage() + ")");
                    assertEquals(err.get("key"), e.key(), "error key (" + e.getMessage() + ")");
                    assertTrue(e.getMessage().contains("`" + e.key()), "message names the key: " + e.getMessage());
                    return;
                }
                Map<String, Object> want = (Map<String, Object>) expect.get("report");
                GateReport r = GateReport.parse(line);
                assertEquals(want.get("epoch"), r.epoch == null ? null : Long.toUnsignedString(r.epoch), "epoch");
                assertEquals(want.get("stage"), r.stage == null ? null : r.stage.wire(), "stage");
                assertEquals(want.get("active"), r.active == null ? null : r.active.wire(), "active");
                assertEquals(((Number) want.get("watermark_stage")).intValue(), r.watermarkStage, "watermark stage");
                assertEquals(want.get("toggle"), r.toggle == null ? null : r.toggle.toString(), "toggle");
                assertEquals(want.get("floor"), r.floor == null ? null : r.floor.toString(), "floor");
                assertEquals(want.get("max_passed"), r.maxPassed == Long.MIN_VALUE ? null : Long.toString(r.maxPassed), "max passed");
                assertEquals(want.get("watermark"), r.watermark == Long.MIN_VALUE ? null : Long.toString(r.watermark), "watermark");
                assertEquals(want.get("idle"), r.idle, "idle");
                assertEquals(want.get("color"), r.color == null ? null : r.color.wire(), "color");
                assertEquals(want.get("problem"), r.problem, "problem");
                // Formatting gives the line back (single spaces, without the unknown keys a reader ignores).
                String core = r.line().split(" color=")[0].split(" problem=")[0];
                String spaced = String.join(" ", Arrays.stream(line.split("[ \\t\\n\\r\\f]+")).filter(t -> !t.isEmpty()).toArray(String[]::new));
                assertTrue(spaced.equals(core) || spaced.startsWith(core + " "), "formats as the vector: " + r.line());
                assertEquals(r, GateReport.parse(r.line()), "reads its own line back");
                // A gate that applied this state writes exactly this line.
                if (r.epoch != null) {
                    CoordinationState s = CoordinationState.of(r.epoch, r.active, r.stage, WatermarkStage.values()[r.watermarkStage],
                            r.toggle == null ? 0 : r.toggle, 0).withFloor(r.floor);
                    assertEquals(r.line(), GateReport.line(s, r.maxPassed, r.watermark, r.idle, r.color, r.problem), "the gate's line for " + s);
                }
            }));
        }
        return tests.stream();
    }
}
