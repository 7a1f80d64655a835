package io.bluegreen.gate;

import static io.bluegreen.gate.TestRunner.check;
import static io.bluegreen.gate.TestRunner.checkEq;
import static io.bluegreen.gate.TestRunner.test;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/** Every case of protocol/vectors/{decisions,configmaps,gate-reports}.json through the Java implementation. */
final class ProtocolVectorsTest {
    private ProtocolVectorsTest() {}

    static Path repo() {
        return Path.of(System.getProperty("bluegreen.repo", "."));
    }

    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> cases(String file) {
        try {
            String text = Files.readString(repo().resolve("protocol/vectors").resolve(file), StandardCharsets.UTF_8);
            Map<String, Object> doc = (Map<String, Object>) Json.parse(text);
            check(doc.get("description") instanceof String, file + ": description");
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

    @SuppressWarnings("unchecked")
    static void register() {
        List<Map<String, Object>> decisions = cases("decisions.json");
        check(decisions.size() >= 200, "decisions.json has " + decisions.size() + " cases");
        int n = 0;
        for (Map<String, Object> c : decisions) {
            Color color = Color.fromWire((String) c.get("color"));
            Map<String, String> data = strings(c.get("configmap"));
            List<Map<String, Object>> expect = (List<Map<String, Object>>) c.get("decisions");
            String name = "vector decisions #" + (n++) + " " + color + " " + data.get("stage") + " "
                    + data.get("watermark-stage") + " active=" + data.get("active-deployment-type")
                    + " W=" + data.get("watermark-toggle-value");
            test(name, () -> {
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
                    checkEq(want, rule.decide(t), "Rule.forState decision at t=" + t);
                    checkEq(want, Rule.decide(state, color, t), "Rule.decide at t=" + t);
                    checkEq(want, gate.decide(t), "Gate decision at t=" + t);
                }
            });
        }
        List<Map<String, Object>> configmaps = cases("configmaps.json");
        check(configmaps.size() >= 50, "configmaps.json has " + configmaps.size() + " cases");
        for (Map<String, Object> c : configmaps) {
            Map<String, String> data = strings(c.get("configmap"));
            Map<String, Object> expect = (Map<String, Object>) c.get("expect");
            test("vector configmaps: " + c.get("name"), () -> {
                if (expect.containsKey("error")) {
                    Map<String, Object> err = (Map<String, Object>) expect.get("error");
                    ProtocolException e = TestRunner.expectThrows(ProtocolException.class, () -> CoordinationState.fromData(data));
                    checkEq(err.get("kind"), e.kind().name(), "error kind (" + e.getMessage() + ")");
                    checkEq(err.get("key"), e.key(), "error key (" + e.getMessage() + ")");
                    check(e.getMessage().contains("`" + e.key() + "`"), "message names the key: " + e.getMessage());
                } else {
                    Map<String, Object> st = (Map<String, Object>) expect.get("state");
                    CoordinationState s = CoordinationState.fromData(data);
                    checkEq(st.get("active"), s.active().wire(), "active");
                    checkEq(st.get("deletion_delay_ms"), Long.toUnsignedString(s.deletionDelayMs()), "deletion delay");
                    checkEq(st.get("epoch"), Long.toUnsignedString(s.epoch()), "epoch");
                    checkEq(st.get("stage"), s.stage().wire(), "stage");
                    checkEq(st.get("watermark_stage"), s.watermarkStage().wire(), "watermark stage");
                    checkEq(st.get("toggle"), s.hasToggle() ? Long.toString(s.watermarkToggleValue()) : null, "toggle");
                    checkEq(st.get("floor"), s.hasFloor() ? Long.toString(s.floor()) : null, "floor");
                    // Round trip: the written data parses back to the same state.
                    checkEq(s, CoordinationState.fromData(s.toData()), "round trip");
                }
            });
        }
        List<Map<String, Object>> reports = cases("gate-reports.json");
        check(reports.size() >= 20, "gate-reports.json has " + reports.size() + " cases");
        for (Map<String, Object> c : reports) {
            String line = (String) c.get("line");
            Map<String, Object> expect = (Map<String, Object>) c.get("expect");
            test("vector gate-reports: " + c.get("name"), () -> {
                if (expect.containsKey("error")) {
                    Map<String, Object> err = (Map<String, Object>) expect.get("error");
                    GateReport.ParseException e = TestRunner.expectThrows(GateReport.ParseException.class, () -> GateReport.parse(line));
                    checkEq(err.get("kind"), e.kind().name(), "error kind (" + e.getMessage() + ")");
                    checkEq(err.get("key"), e.key(), "error key (" + e.getMessage() + ")");
                    check(e.getMessage().contains("`" + e.key()), "message names the key: " + e.getMessage());
                    return;
                }
                Map<String, Object> want = (Map<String, Object>) expect.get("report");
                GateReport r = GateReport.parse(line);
                checkEq(want.get("epoch"), r.epoch == null ? null : Long.toUnsignedString(r.epoch), "epoch");
                checkEq(want.get("stage"), r.stage == null ? null : r.stage.wire(), "stage");
                checkEq(want.get("active"), r.active == null ? null : r.active.wire(), "active");
                checkEq(((Number) want.get("watermark_stage")).intValue(), r.watermarkStage, "watermark stage");
                checkEq(want.get("toggle"), r.toggle == null ? null : r.toggle.toString(), "toggle");
                checkEq(want.get("floor"), r.floor == null ? null : r.floor.toString(), "floor");
                checkEq(want.get("max_passed"), r.maxPassed == Long.MIN_VALUE ? null : Long.toString(r.maxPassed), "max passed");
                checkEq(want.get("watermark"), r.watermark == Long.MIN_VALUE ? null : Long.toString(r.watermark), "watermark");
                checkEq(want.get("idle"), r.idle, "idle");
                // Formatting gives the line back (without the unknown keys a reader ignores).
                check(line.equals(r.line()) || line.startsWith(r.line() + " "), "formats as the vector: " + r.line());
                // A gate that applied this state writes exactly this line.
                if (r.epoch != null) {
                    CoordinationState s = CoordinationState.of(r.epoch, r.active, r.stage, WatermarkStage.values()[r.watermarkStage],
                            r.toggle == null ? 0 : r.toggle, 0).withFloor(r.floor);
                    checkEq(r.line(), GateReport.line(s, r.maxPassed, r.watermark, r.idle), "the gate's line for " + s);
                }
            });
        }
    }
}
