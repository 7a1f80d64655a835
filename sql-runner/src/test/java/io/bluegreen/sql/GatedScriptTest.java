package io.bluegreen.sql;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.bluegreen.gate.Color;
import io.bluegreen.gate.CoordinationState;
import io.bluegreen.gate.Stage;
import io.bluegreen.gate.StateSource;
import io.bluegreen.gate.StaticStateSource;
import io.bluegreen.gate.WatermarkStage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.util.EnvironmentInformation;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.junit.jupiter.api.DisplayName;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class GatedScriptTest {
    /** Records 0..n-1: key id % 4, event time T0 + 100 ms * id. */
    static final long T0 = 1_700_000_000_000L;

    @TempDir
    Path dir;

    private String source(int n) throws IOException {
        Path in = dir.resolve("in");
        Files.createDirectories(in);
        StringBuilder csv = new StringBuilder();
        for (int id = 0; id < n; id++) {
            csv.append(id).append(',').append(id % 4).append(',').append(T0 + 100L * id).append('\n');
        }
        Files.write(in.resolve("part-0.csv"), csv.toString().getBytes(StandardCharsets.UTF_8));
        return "SET 'table.local-time-zone' = 'UTC';\n"
                + "CREATE TABLE events (id BIGINT, k INT, ts_ms BIGINT, ts AS TO_TIMESTAMP_LTZ(ts_ms, 3),\n"
                + "  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND)\n"
                + "  WITH ('connector' = 'filesystem', 'path' = '" + in.toUri() + "', 'format' = 'csv');\n";
    }

    private String sink(String name, String columns) {
        return "CREATE TABLE " + name + " (" + columns + ") WITH ('connector' = 'filesystem', 'path' = '"
                + dir.resolve("out").resolve(name).toUri() + "', 'format' = 'csv');\n";
    }

    private static final String PROJECTION_SINK = "id BIGINT, k INT, ts TIMESTAMP_LTZ(3)";
    private static final String WINDOW_SINK =
            "k INT, window_start TIMESTAMP(3), window_end TIMESTAMP(3), cnt BIGINT, window_time TIMESTAMP_LTZ(3)";

    private static Supplier<StateSource> running(Color color) {
        return () -> StaticStateSource.of(CoordinationState.of(0, color, Stage.RUNNING, WatermarkStage.WATERMARK_NOT_SET, 0, 60_000));
    }

    private static StreamExecutionEnvironment env(int parallelism) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(new Configuration());
        env.setParallelism(parallelism);
        env.enableCheckpointing(500);
        return env;
    }

    private static List<GatedScript.Insert> build(StreamExecutionEnvironment env, String script, Supplier<StateSource> states) {
        return new GatedScript(StreamTableEnvironment.create(env), Color.BLUE, states).build(script);
    }

    private RefusedStatementException refused(String script) {
        return assertThrows(RefusedStatementException.class, () -> build(env(1), script, running(Color.BLUE)));
    }

    @Test
    @DisplayName("refusal: an unwindowed GROUP BY produces updates and is refused naming the table and the way out")
    void unwindowedGroupByIsRefused() throws Exception {
        String script = source(10) + sink("counts", "k INT, cnt BIGINT")
                + "INSERT INTO counts SELECT k, COUNT(*) AS cnt FROM events GROUP BY k;";
        RefusedStatementException e = refused(script);
        String m = e.getMessage();
        assertTrue(m.contains("INSERT INTO default_catalog.default_database.counts:"), m);
        assertTrue(m.contains("produces updates"), m);
        assertTrue(m.contains("has no event-time column (columns: k, cnt)"), m);
        assertTrue(m.contains("TUMBLE/HOP/CUMULATE"), m);
        assertTrue(m.contains("nothing was written"), m);
    }

    @Test
    @DisplayName("refusal: a projection without the event-time column is refused naming the table and its columns")
    void noRowtimeIsRefused() throws Exception {
        String script = source(10) + sink("ids", "id BIGINT, k INT")
                + "INSERT INTO ids SELECT id, k FROM events;";
        String m = refused(script).getMessage();
        assertTrue(m.contains(".ids: no column of the query is an event-time attribute (columns: id, k)"), m);
        assertTrue(m.contains("WATERMARK"), m);
    }

    @Test
    @DisplayName("refusal: a sink other than filesystem/csv, CREATE TABLE AS and a bare SELECT are refused, all at once")
    void otherSinksAreRefused() throws Exception {
        String script = source(10)
                + "CREATE TABLE bh (id BIGINT, ts TIMESTAMP_LTZ(3)) WITH ('connector' = 'blackhole');\n"
                + "INSERT INTO bh SELECT id, ts FROM events;\n"
                + "SELECT * FROM events;";
        RefusedStatementException e = refused(script);
        assertEquals(2, e.reasons().size(), e.getMessage());
        assertTrue(e.reasons().get(0).contains(".bh: the sink has connector 'blackhole'"), e.getMessage());
        assertTrue(e.reasons().get(1).contains("a SELECT without INSERT INTO"), e.getMessage());
    }

    @Test
    @DisplayName("refusal: a regular join (updates) and two event-time columns are refused")
    void regularJoinAndTwoRowtimes() throws Exception {
        String base = source(10) + sink("joined", "id BIGINT, ts TIMESTAMP_LTZ(3), ts2 TIMESTAMP_LTZ(3)")
                + sink("joined2", "id BIGINT, ts TIMESTAMP_LTZ(3)");
        String m = refused(base + "INSERT INTO joined2 SELECT a.id, a.ts FROM events a JOIN (SELECT k, COUNT(*) c FROM events"
                + " GROUP BY k) b ON a.k = b.k;").getMessage();
        assertTrue(m.contains(".joined2: the query produces updates"), m);
        m = refused(base + "INSERT INTO joined SELECT a.id, a.ts, b.ts FROM events a, events b WHERE a.id = b.id"
                + " AND a.ts BETWEEN b.ts - INTERVAL '1' SECOND AND b.ts;").getMessage();
        assertTrue(m.contains(".joined: the query has 2 event-time columns (ts, ts0)"), m);
    }

    @Test
    @DisplayName("refusal: an append-only regular join (no time bound) is refused: the planner drops its event time")
    void appendOnlyRegularJoinIsRefused() throws Exception {
        // Both inputs append-only, so the join is too; but it bounds no time (ts_ms is a BIGINT), a row
        // is written whenever its match arrives, and Flink's planner materializes a.ts into a plain timestamp.
        String m = refused(source(10) + sink("joined", "id BIGINT, other BIGINT, ts TIMESTAMP_LTZ(3)")
                + "INSERT INTO joined SELECT a.id, b.id, a.ts FROM events a, (SELECT id, k, ts_ms FROM events) b"
                + " WHERE a.k = b.k AND a.ts_ms BETWEEN b.ts_ms - 100 AND b.ts_ms;").getMessage();
        assertTrue(m.contains(".joined: the planner drops the event-time attribute ts (columns: id, id0, ts)"), m);
        assertTrue(m.contains("interval join"), m);
    }

    @Test
    @DisplayName("other shapes: window Top-N, window deduplication, window join and an event-time OVER aggregation are"
            + " accepted and gated by their rowtime; deduplication and Top-N without a window are refused (updates)")
    void otherShapes() throws Exception {
        String script = source(10)
                + sink("wtopn", "k INT, window_start TIMESTAMP(3), window_end TIMESTAMP(3), cnt BIGINT, window_time TIMESTAMP_LTZ(3)")
                + sink("wdedup", "id BIGINT, k INT, window_end TIMESTAMP(3), window_time TIMESTAMP_LTZ(3)")
                + sink("wjoin", "id BIGINT, other BIGINT, window_time TIMESTAMP_LTZ(3)")
                + sink("over_agg", "id BIGINT, k INT, ts TIMESTAMP_LTZ(3), id_sum BIGINT")
                + "INSERT INTO wtopn SELECT k, window_start, window_end, cnt, window_time FROM (SELECT *, ROW_NUMBER() OVER"
                + " (PARTITION BY window_start, window_end ORDER BY cnt DESC) AS rn FROM (SELECT k, window_start, window_end,"
                + " window_time, COUNT(*) AS cnt FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '1' SECOND))"
                + " GROUP BY k, window_start, window_end, window_time)) WHERE rn <= 2;\n"
                + "INSERT INTO wdedup SELECT id, k, window_end, window_time FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY"
                + " window_start, window_end, k ORDER BY ts ASC) AS rn FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts),"
                + " INTERVAL '1' SECOND))) WHERE rn = 1;\n"
                + "INSERT INTO wjoin SELECT L.id, R.id, L.window_time FROM (SELECT * FROM TABLE(TUMBLE(TABLE events,"
                + " DESCRIPTOR(ts), INTERVAL '1' SECOND))) L JOIN (SELECT * FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts),"
                + " INTERVAL '1' SECOND))) R ON L.k = R.k AND L.window_start = R.window_start AND L.window_end = R.window_end;\n"
                + "INSERT INTO over_agg SELECT id, k, ts, SUM(id) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING"
                + " AND CURRENT ROW) FROM events;\n";
        List<GatedScript.Insert> inserts = build(env(2), script, running(Color.BLUE));
        assertEquals(List.of("window_time", "window_time", "window_time", "ts"),
                inserts.stream().map(i -> i.rowtimeColumn).collect(Collectors.toList()));
        String deduped = sink("deduped", PROJECTION_SINK);
        String firstRow = "SELECT id, k, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts ASC) AS rn FROM events) WHERE rn = 1";
        for (String query : List.of(firstRow,
                "SELECT id, k, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts DESC) AS rn FROM events) WHERE rn = 1",
                "SELECT id, k, ts FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY id DESC) AS rn FROM events) WHERE rn <= 2")) {
            String one = source(10) + deduped + "INSERT INTO deduped " + query + ";";
            if (query.equals(firstRow) && EnvironmentInformation.getVersion().startsWith("2.")) {
                // Flink 2.x plans an event-time deduplication that keeps the first row as append-only.
                assertEquals("ts", build(env(1), one, running(Color.BLUE)).get(0).rowtimeColumn);
                continue;
            }
            String m = assertThrows(RefusedStatementException.class, () -> build(env(1), one, running(Color.BLUE)), query)
                    .getMessage();
            assertTrue(m.contains(".deduped: the query produces updates"), query + ": " + m);
        }
    }

    /** A csv line with every timestamp field as epoch ms (quotes and the LTZ's Z dropped). */
    private static String canonical(String line) {
        return Stream.of(line.split(",")).map(f -> {
            String v = f.replace("\"", "").replace("Z", "");
            return v.matches("\\d{4}-\\d\\d-\\d\\d[ T].*")
                    ? String.valueOf(LocalDateTime.parse(v.replace(' ', 'T')).toInstant(ZoneOffset.UTC).toEpochMilli())
                    : v;
        }).collect(Collectors.joining(","));
    }

    /** One expected output row and the event time its gate decides by. */
    private static final class Row {
        final String line;
        final long t;

        Row(long t, Object... fields) {
            this.line = Stream.of(fields).map(String::valueOf).collect(Collectors.joining(","));
            this.t = t;
        }
    }

    private List<String> canonicalLines(String table, Color color) throws IOException {
        return lines(table, color).stream().map(GatedScriptTest::canonical).sorted().collect(Collectors.toList());
    }

    private static List<String> owned(List<Row> rows, Color color, long w) {
        return rows.stream().filter(r -> (r.t > w) == (color == Color.GREEN)).map(r -> r.line).sorted()
                .collect(Collectors.toList());
    }

    @Test
    @DisplayName("handover on a MiniCluster: HOP, CUMULATE, an interval join and an OVER aggregation, blue and green at"
            + " one W, write every row once, by the color that owns its window_time or kept rowtime (oracle from the input)")
    void handoverOfHopCumulateIntervalJoinAndOver() throws Exception {
        int n = 40; // event times T0 .. T0 + 3.9 s, key id % 4
        long w = T0 + 1550; // inside windows, so that some straddle it
        String script = source(n) + sink("hop", WINDOW_SINK) + sink("cumulate", WINDOW_SINK)
                + sink("ijoin", "id BIGINT, other BIGINT, other_ts_ms BIGINT, ts TIMESTAMP_LTZ(3)")
                + sink("over_agg", "id BIGINT, k INT, ts TIMESTAMP_LTZ(3), id_sum BIGINT")
                + "INSERT INTO hop SELECT k, window_start, window_end, COUNT(*), window_time FROM TABLE(HOP(TABLE events,"
                + " DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '2' SECOND)) GROUP BY k, window_start, window_end, window_time;\n"
                + "INSERT INTO cumulate SELECT k, window_start, window_end, COUNT(*), window_time FROM TABLE(CUMULATE(TABLE"
                + " events, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '2' SECOND)) GROUP BY k, window_start, window_end, window_time;\n"
                + "INSERT INTO ijoin SELECT a.id, b.id, b.ts_ms, a.ts FROM events a, events b"
                + " WHERE a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '0.5' SECOND AND b.ts;\n"
                + "INSERT INTO over_agg SELECT id, k, ts, SUM(id) OVER (PARTITION BY k ORDER BY ts ROWS BETWEEN 2 PRECEDING"
                + " AND CURRENT ROW) FROM events;\n";
        Supplier<StateSource> handover = () -> StaticStateSource.of(
                CoordinationState.of(1, Color.GREEN, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, w, 60_000));
        for (Color color : Color.values()) {
            StreamExecutionEnvironment env = env(2);
            List<GatedScript.Insert> inserts = new GatedScript(StreamTableEnvironment.create(env), color, handover).build(script);
            assertEquals(List.of("window_time", "window_time", "ts", "ts"),
                    inserts.stream().map(i -> i.rowtimeColumn).collect(Collectors.toList()));
            env.execute("handover " + color);
        }
        // The oracle, from the input alone.
        Map<String, Long> hop = new TreeMap<>();
        Map<String, Long> cumulate = new TreeMap<>();
        List<Row> ijoin = new ArrayList<>();
        List<Row> over = new ArrayList<>();
        for (int id = 0; id < n; id++) {
            long ts = T0 + 100L * id;
            int k = id % 4;
            for (long start = Math.floorDiv(ts, 1000) * 1000 - 1000; start <= ts; start += 1000) {
                hop.merge(k + "," + start + "," + (start + 2000), 1L, Long::sum);
            }
            long base = Math.floorDiv(ts, 2000) * 2000;
            for (long end = base + 1000; end <= base + 2000; end += 1000) {
                if (ts < end) {
                    cumulate.merge(k + "," + base + "," + end, 1L, Long::sum);
                }
            }
            for (int other = 0; other < n; other++) {
                long bts = T0 + 100L * other;
                if (other % 4 == k && ts >= bts - 500 && ts <= bts) {
                    ijoin.add(new Row(ts, id, other, bts, ts));
                }
            }
            long sum = id + (id >= 4 ? id - 4 : 0) + (id >= 8 ? id - 8 : 0);
            over.add(new Row(ts, id, k, ts, sum));
        }
        List<Row> hopRows = windows(hop);
        List<Row> cumulateRows = windows(cumulate);
        assertTrue(hopRows.stream().anyMatch(r -> r.t > w && Long.parseLong(r.line.split(",")[1]) < w),
                "a HOP window straddles W");
        for (Color color : Color.values()) {
            assertEquals(owned(hopRows, color, w), canonicalLines("hop", color), "hop, " + color);
            assertEquals(owned(cumulateRows, color, w), canonicalLines("cumulate", color), "cumulate, " + color);
            assertEquals(owned(ijoin, color, w), canonicalLines("ijoin", color), "ijoin, " + color);
            assertEquals(owned(over, color, w), canonicalLines("over_agg", color), "over_agg, " + color);
        }
    }

    /** Window rows {@code k,start,end,count,window_time} of counts by {@code k,start,end}. */
    private static List<Row> windows(Map<String, Long> counts) {
        List<Row> rows = new ArrayList<>();
        counts.forEach((key, cnt) -> {
            String[] f = key.split(",");
            long end = Long.parseLong(f[2]);
            rows.add(new Row(end - 1, f[0], f[1], end, cnt, end - 1));
        });
        return rows;
    }

    @Test
    @DisplayName("accepted: append-only projection, TUMBLE/HOP/CUMULATE window aggregations and an interval join, each gated")
    void supportedShapes() throws Exception {
        String script = source(10)
                + sink("proj", PROJECTION_SINK)
                + sink("tumble", WINDOW_SINK) + sink("hop", WINDOW_SINK) + sink("cumulate", WINDOW_SINK)
                + sink("ijoin", "id BIGINT, other BIGINT, ts TIMESTAMP_LTZ(3)")
                + "INSERT INTO proj SELECT id, k, ts FROM events WHERE id >= 0;\n"
                + "EXECUTE STATEMENT SET BEGIN\n"
                + "INSERT INTO tumble SELECT k, window_start, window_end, COUNT(*), window_time"
                + " FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY k, window_start, window_end, window_time;\n"
                + "INSERT INTO hop SELECT k, window_start, window_end, COUNT(*), window_time"
                + " FROM TABLE(HOP(TABLE events, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '2' SECOND)) GROUP BY k, window_start, window_end, window_time;\n"
                + "END;\n"
                + "INSERT INTO cumulate SELECT k, window_start, window_end, COUNT(*), window_time"
                + " FROM TABLE(CUMULATE(TABLE events, DESCRIPTOR(ts), INTERVAL '1' SECOND, INTERVAL '2' SECOND)) GROUP BY k, window_start, window_end, window_time;\n"
                + "INSERT INTO ijoin SELECT a.id, b.id, a.ts FROM events a, events b"
                + " WHERE a.k = b.k AND a.ts BETWEEN b.ts - INTERVAL '0.1' SECOND AND b.ts;";
        List<GatedScript.Insert> inserts = build(env(2), script, running(Color.BLUE));
        assertEquals(List.of("proj", "tumble", "hop", "cumulate", "ijoin"),
                inserts.stream().map(i -> i.name).collect(Collectors.toList()));
        assertEquals(List.of("ts", "window_time", "window_time", "window_time", "ts"),
                inserts.stream().map(i -> i.rowtimeColumn).collect(Collectors.toList()));
    }

    private static Set<String> uids(StreamExecutionEnvironment env, String prefix) {
        StreamGraph graph = env.getStreamGraph();
        Set<String> uids = new TreeSet<>();
        for (StreamNode node : graph.getStreamNodes()) {
            String uid = node.getTransformationUID();
            if (uid != null && uid.startsWith(prefix)) {
                uids.add(uid);
            }
        }
        return uids;
    }

    @Test
    @DisplayName("uids: a statement's operators keep their uids when another statement changes and the parallelism changes")
    void stableUids() throws Exception {
        String window = sink("tumble", WINDOW_SINK)
                + "INSERT INTO tumble SELECT k, window_start, window_end, COUNT(*), window_time"
                + " FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY k, window_start, window_end, window_time;\n";
        StreamExecutionEnvironment v1 = env(2);
        build(v1, source(10) + sink("proj", PROJECTION_SINK) + "INSERT INTO proj SELECT id, k, ts FROM events;\n" + window,
                running(Color.BLUE));
        StreamExecutionEnvironment v2 = env(3);
        build(v2, source(10) + sink("proj", PROJECTION_SINK + ", k10 INT")
                + "INSERT INTO proj SELECT id, k, ts, k * 10 FROM events WHERE k >= 0;\n" + window, running(Color.BLUE));
        Set<String> a = uids(v1, "sql-tumble-");
        Set<String> b = uids(v2, "sql-tumble-");
        assertTrue(a.contains("sql-tumble-0-events"), a.toString());
        assertTrue(a.stream().anyMatch(u -> u.contains("WindowAggregate")), a.toString());
        assertEquals(a, b);
    }

    private List<String> lines(String table) throws IOException {
        return lines(table, Color.BLUE);
    }

    private List<String> lines(String table, Color color) throws IOException {
        Path out = dir.resolve("out").resolve(table);
        List<String> lines = new ArrayList<>();
        try (Stream<Path> files = Files.walk(out)) {
            for (Path f : files.filter(Files::isRegularFile).collect(Collectors.toList())) {
                if (f.getFileName().toString().startsWith("part-" + color.name().toLowerCase(Locale.ROOT) + "-")) {
                    lines.addAll(Files.readAllLines(f));
                }
            }
        }
        return lines;
    }

    @Test
    @DisplayName("run on a MiniCluster: blue at W = T0 + 1999 writes exactly the projected rows and windows whose event time is <= W")
    void gatedRun() throws Exception {
        int n = 40; // event times T0 .. T0 + 3.9 s
        long w = T0 + 1999;
        String script = source(n) + sink("proj", PROJECTION_SINK) + sink("tumble", WINDOW_SINK)
                + "INSERT INTO proj SELECT id, k, ts FROM events;\n"
                + "INSERT INTO tumble SELECT k, window_start, window_end, COUNT(*), window_time"
                + " FROM TABLE(TUMBLE(TABLE events, DESCRIPTOR(ts), INTERVAL '1' SECOND)) GROUP BY k, window_start, window_end, window_time;\n";
        StreamExecutionEnvironment env = env(2);
        Supplier<StateSource> handover = () -> StaticStateSource.of(
                CoordinationState.of(1, Color.GREEN, Stage.TRANSITIONING, WatermarkStage.WATERMARK_SET, w, 60_000));
        build(env, script, handover);
        env.execute("gated sql");
        List<String> proj = lines("proj");
        assertEquals(20, proj.size(), proj.toString());
        assertTrue(proj.contains("19,3,\"2023-11-14 22:13:21.900Z\"") || proj.stream().anyMatch(l -> l.startsWith("19,3,")),
                proj.toString());
        assertTrue(proj.stream().noneMatch(l -> l.startsWith("20,")), proj.toString());
        // Windows [T0, T0+1s) and [T0+1s, T0+2s): window_time T0+999 and T0+1999 <= W; 4 keys each, 10 records per window.
        List<String> windows = lines("tumble");
        assertEquals(8, windows.size(), windows.toString());
        assertTrue(windows.stream().allMatch(l -> l.split(",")[3].equals("10") || l.split(",")[3].equals("3")
                || l.split(",")[3].equals("2")), windows.toString());
    }

    @Test
    @DisplayName("Table API: insertInto gates a Table into a filesystem table and refuses an updating one, as a script's INSERT")
    void tableApi() throws Exception {
        StreamExecutionEnvironment env = env(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        GatedScript gated = new GatedScript(tEnv, Color.BLUE, running(Color.BLUE));
        for (String ddl : ScriptSplitter.split(source(10) + sink("proj", PROJECTION_SINK) + sink("counts", "k INT, cnt BIGINT"))) {
            if (ddl.startsWith("SET")) {
                tEnv.getConfig().set("table.local-time-zone", "UTC");
            } else {
                tEnv.executeSql(ddl);
            }
        }
        GatedScript.Insert insert = gated.insertInto(tEnv.from("events").select(
                org.apache.flink.table.api.Expressions.$("id"), org.apache.flink.table.api.Expressions.$("k"),
                org.apache.flink.table.api.Expressions.$("ts")), "proj");
        assertEquals("ts", insert.rowtimeColumn);
        RefusedStatementException e = assertThrows(RefusedStatementException.class, () -> gated.insertInto(
                tEnv.sqlQuery("SELECT k, COUNT(*) AS cnt FROM events GROUP BY k"), "counts"));
        assertTrue(e.getMessage().contains(".counts: the query produces updates"), e.getMessage());
        env.execute("table api");
        assertEquals(10, lines("proj").size());
    }

    @Test
    @DisplayName("script: BEGIN STATEMENT SET; ...; END; (the SQL client's form) gates every INSERT inside")
    void clientStatementSet() throws Exception {
        String script = source(10) + sink("a", PROJECTION_SINK) + sink("b", PROJECTION_SINK)
                + "BEGIN STATEMENT SET;\nINSERT INTO a SELECT id, k, ts FROM events;\nINSERT INTO b SELECT id, k, ts FROM events;\nEND;";
        List<GatedScript.Insert> inserts = build(env(1), script, running(Color.BLUE));
        assertEquals(List.of("a", "b"), inserts.stream().map(i -> i.name).collect(Collectors.toList()));
    }
}
