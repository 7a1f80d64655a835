package io.bluegreen.examples;

import io.bluegreen.gate.Color;
import io.bluegreen.gate.CoordinationState;
import io.bluegreen.gate.GateProcessFunction;
import io.bluegreen.gate.GateSinkWrapper;
import io.bluegreen.gate.SidecarStateSource;
import io.bluegreen.gate.Stage;
import io.bluegreen.gate.StateSource;
import io.bluegreen.gate.StaticStateSource;
import io.bluegreen.gate.WatermarkStage;
import io.bluegreen.gate.sink.BlueGreenSinks;
import io.bluegreen.gate.sink.ColorIsolatedSink;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.serialization.SimpleStringEncoder;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.core.fs.Path;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.filesystem.bucketassigners.BasePathBucketAssigner;
import org.apache.flink.streaming.api.functions.windowing.ProcessWindowFunction;
import org.apache.flink.streaming.api.windowing.assigners.TumblingEventTimeWindows;
import org.apache.flink.streaming.api.windowing.windows.TimeWindow;
import org.apache.flink.util.Collector;

/**
 * The example job of the end-to-end tests and the demo: a deterministic, paced, replayable source
 * ({@link ExampleSource}), a keyed running count, the bluegreen gate and an exactly-once
 * {@link FileSink}. Every output line is {@code split,offset,eventTime,key,count,color,version,value}.
 * Arguments are {@code --key value} pairs; see {@link #USAGE}.
 */
public final class ExampleJob {
    /** Printed with every argument error. */
    public static final String USAGE = String.join("\n",
            "usage: ExampleJob --output DIR [--key value ...]",
            "       ExampleJob --topology kafka --kafka BOOTSTRAP --input-topic T --output-topic T2 [--key value ...]",
            "  --output DIR                 where the FileSink commits its part files (required but with --topology kafka)",
            "  --version v1|v2              v2 writes value = 2 * count instead of count (default v1)",
            "  --topology keyed|chained|two-sinks|windowed|kafka   (default keyed)",
            "        keyed:     source -> keyBy -> running count -> gate -> sink",
            "        chained:   source -> map -> gate -> sink in one chained vertex, count written as 0",
            "        two-sinks: keyed, then two gated FileSinks under DIR/a and DIR/b (in one vertex)",
            "        kafka:     KafkaSource (--input-topic, values 'partition,id,eventTime,key') -> keyBy -> running count",
            "                   -> gate -> KafkaSink EXACTLY_ONCE (--output-topic), split = partition, offset = id",
            "  --kafka BOOTSTRAP            kafka: the brokers (watermark bound 2 * --jitter-ms, the producer's jitter)",
            "  --input-topic T, --output-topic T   kafka: the topics",
            "  --transactional-id-prefix per-color|shared|shared-unchecked   kafka: BlueGreenSinks.transactionalIdPrefix(\"orders\", color)",
            "        (default), or one prefix for both colors: refused at job build (shared), or the gate placed before",
            "        the unwrapped KafkaSink, unchecked (shared-unchecked: the damage the per-color prefix prevents)",
            "  --transaction-naming incrementing|pooling   kafka: KafkaSinkBuilder.setTransactionNamingStrategy (connector",
            "        5.x, Flink 2.x only; default: not set, the connector's DEFAULT, INCREMENTING; 1.20 knows incrementing only)",
            "  --transaction-timeout-ms N   kafka: the producers' transaction.timeout.ms (default 600000)",
            "  --skew-b-ms N                two-sinks: branch b's event times (and watermarks) N ms ahead of a's (default 0)",
            "        windowed:  keyed, then 1 s tumbling event-time windows per key that emit their records",
            "                   when they fire, with eventTime = the window's end - 1 ms (what the gate decides by)",
            "  --placement operator|sink    the gate as an operator before the sink (BlueGreenSinks.sinkTo) or inside",
            "        the sink's writer (BlueGreenSinks.gated); keyed, chained and windowed only (default operator)",
            "  --sink-idleness-ms N         with --placement sink: GateProcessFunction.withSinkIdleness (default: the library's)",
            "  --seed N                     (default 1)",
            "  --splits N                   (default 4)",
            "  --rate N                     records/s per split (default 100)",
            "  --t0 MS                      schedule start, epoch ms (default: now, rounded down to the second)",
            "  --records-per-split N        0: unbounded (default 0)",
            "  --catch-up-rate N            records/s per reader while behind the schedule, 0: full speed (default 0)",
            "  --keys-per-split N           (default 16)",
            "  --jitter-ms N                event time = schedule +- jitter (default 3000); watermark bound 2 * jitter",
            "  --idle-split N|all           split idle in each cycle, -1: none, all: every split (default 1)",
            "  --idle-active-ms N           active part of each cycle (default 20000)",
            "  --idle-cycle-ms N            (default 40000)",
            "  --idleness-ms N              WatermarkStrategy.withIdleness (default 5000)",
            "  --checkpoint-interval-ms N   used only if checkpointing is not configured already (default 2000)",
            "  --parallelism N              (default: the environment's)",
            "  --color BLUE|GREEN           (default: env BLUEGREEN_COLOR)",
            "  --state-source sidecar|static-running|static-handover   (default sidecar)",
            "        sidecar:         SidecarStateSource(env BLUEGREEN_SIDECAR_URL or http://127.0.0.1:8787, 30 s polls)",
            "        static-running:  RUNNING with this color active (passes everything)",
            "        static-handover: epoch 1, TRANSITIONING to --handover-to, WATERMARK_SET at --w",
            "  --w MS                       W for static-handover",
            "  --handover-to BLUE|GREEN     the incoming color for static-handover (default GREEN)",
            "  --rolling on-checkpoint|default   the FileSink's rolling policy (default on-checkpoint);",
            "        default: FileSink's default policy as a user would write it, which the gate library refuses",
            "  --fail-trigger FILE          a task fails once whenever FILE appears (it deletes FILE): a restart on cue");

    private static final Set<String> KNOWN = Set.of("output", "version", "topology", "seed", "splits", "rate", "t0",
            "records-per-split", "catch-up-rate", "keys-per-split", "jitter-ms", "idle-split", "idle-active-ms", "idle-cycle-ms",
            "idleness-ms", "checkpoint-interval-ms", "parallelism", "color", "state-source", "w", "handover-to", "rolling",
            "fail-trigger", "placement", "sink-idleness-ms", "skew-b-ms", "kafka", "input-topic", "output-topic",
            "transactional-id-prefix", "transaction-naming", "transaction-timeout-ms");

    private ExampleJob() {}

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = parse(argv);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        String name = build(env, args);
        env.execute(name);
    }

    /** Parses {@code --key value} pairs; unknown keys and missing values are errors. */
    static Map<String, String> parse(String[] argv) {
        Map<String, String> args = new LinkedHashMap<>();
        for (int i = 0; i < argv.length; i += 2) {
            String k = argv[i];
            if (!k.startsWith("--") || !KNOWN.contains(k.substring(2))) {
                throw new IllegalArgumentException("unknown argument '" + k + "'\n" + USAGE);
            }
            if (i + 1 >= argv.length) {
                throw new IllegalArgumentException("argument " + k + " needs a value\n" + USAGE);
            }
            args.put(k.substring(2), argv[i + 1]);
        }
        if (!args.containsKey("output") && !"kafka".equals(args.get("topology"))) {
            throw new IllegalArgumentException("--output is required\n" + USAGE);
        }
        return args;
    }

    /** Builds the job into {@code env}; returns its name. */
    static String build(StreamExecutionEnvironment env, Map<String, String> args) {
        String version = args.getOrDefault("version", "v1");
        if (!version.equals("v1") && !version.equals("v2")) {
            throw new IllegalArgumentException("--version must be v1 or v2, got '" + version + "'");
        }
        String topology = args.getOrDefault("topology", "keyed");
        Color color = color(args.containsKey("color") ? args.get("color") : System.getenv("BLUEGREEN_COLOR"),
                args.containsKey("color") ? "--color" : "env BLUEGREEN_COLOR");
        if (args.containsKey("parallelism")) {
            env.setParallelism(intArg(args, "parallelism", 1));
        }
        if (env.getCheckpointConfig().getCheckpointInterval() <= 0) {
            env.enableCheckpointing(longArg(args, "checkpoint-interval-ms", 2000));
        }
        long t0 = args.containsKey("t0") ? longArg(args, "t0", 0) : System.currentTimeMillis() / 1000 * 1000;
        Records records = new Records(longArg(args, "seed", 1), intArg(args, "keys-per-split", 16),
                longArg(args, "rate", 100), t0, longArg(args, "jitter-ms", 3000), idleSplit(args),
                longArg(args, "idle-active-ms", 20000), longArg(args, "idle-cycle-ms", 40000));
        ExampleSource source = new ExampleSource(records, intArg(args, "splits", 4),
                longArg(args, "records-per-split", 0), longArg(args, "catch-up-rate", 0));
        WatermarkStrategy<Event> watermarks = WatermarkStrategy
                .<Event>forBoundedOutOfOrderness(Duration.ofMillis(records.outOfOrdernessMs()))
                .withTimestampAssigner((e, ts) -> e.eventTime)
                .withIdleness(Duration.ofMillis(longArg(args, "idleness-ms", 5000)));
        StateSource states = stateSource(args, color);
        String c = color.name();
        String failTrigger = args.get("fail-trigger");
        if (topology.equals("kafka")) {
            for (String required : new String[] {"kafka", "input-topic", "output-topic"}) {
                if (!args.containsKey(required)) {
                    throw new IllegalArgumentException("--topology kafka needs --" + required + "\n" + USAGE);
                }
            }
            DataStream<Event> events = KafkaShape.source(env, args.get("kafka"), args.get("input-topic"), color,
                    records.outOfOrdernessMs(), longArg(args, "idleness-ms", 5000));
            DataStream<String> lines = counted(events).map(new ToLine(c, version, failTrigger)).uid("to-line").name("to-line");
            KafkaShape.sink(lines, new GateProcessFunction<>(color, states), args.get("kafka"), args.get("output-topic"),
                    args.getOrDefault("transactional-id-prefix", "per-color"), color, args.get("transaction-naming"),
                    longArg(args, "transaction-timeout-ms", 600_000));
            return "bluegreen-example kafka " + version + " " + c;
        }
        DataStream<Event> events = env.fromSource(source, watermarks, "example-source").uid("example-source");
        Path output = new Path(args.get("output"));
        String rolling = args.getOrDefault("rolling", "on-checkpoint");
        String placement = args.getOrDefault("placement", "operator");
        if (!placement.equals("operator") && !placement.equals("sink")) {
            throw new IllegalArgumentException("--placement must be operator or sink, got '" + placement + "'");
        }
        GateProcessFunction<String> gate = new GateProcessFunction<>(color, states);
        if (args.containsKey("sink-idleness-ms")) {
            gate = gate.withSinkIdleness(Duration.ofMillis(longArg(args, "sink-idleness-ms", 0)));
        }
        switch (topology) {
            case "keyed": {
                DataStream<String> lines = counted(events).map(new ToLine(c, version, failTrigger)).uid("to-line").name("to-line");
                sink(lines, gate, fileSink(output, color, rolling), placement);
                break;
            }
            case "chained": {
                DataStream<String> lines = events.map(new ToLine(c, version, failTrigger)).uid("to-line-chained").name("to-line");
                sink(lines, gate, fileSink(output, color, rolling), placement);
                break;
            }
            case "windowed": {
                DataStream<String> lines = windowed(counted(events)).map(new ToLine(c, version, failTrigger))
                        .uid("to-line").name("to-line");
                sink(lines, gate, fileSink(output, color, rolling), placement);
                break;
            }
            case "two-sinks": {
                if (placement.equals("sink")) {
                    throw new IllegalArgumentException("--topology two-sinks places its gates as operators: drop --placement sink");
                }
                DataStream<Event> counted = counted(events);
                DataStream<String> lines = counted.map(new ToLine(c, version, failTrigger)).uid("to-line").name("to-line");
                BlueGreenSinks.sinkTo(lines, gate, fileSink(new Path(output, "a"), color, rolling), "file-sink-a");
                long skew = longArg(args, "skew-b-ms", 0);
                DataStream<String> linesB = skew == 0 ? lines : counted.map(new Skew(skew)).uid("skew-b").name("skew-b")
                        .assignTimestampsAndWatermarks(watermarks).uid("skew-b-time").name("skew-b-time")
                        .map(new ToLine(c, version, null)).uid("to-line-b").name("to-line-b");
                // The second gate needs its own uid: Flink refuses two operators with one uid.
                SingleOutputStreamOperator<String> gatedB = GateSinkWrapper.gate(linesB,
                        new GateProcessFunction<>(color, states), GateSinkWrapper.UID + "-b");
                gatedB.sinkTo(ColorIsolatedSink.wrap(fileSink(new Path(output, "b"), color, rolling), color))
                        .uid("file-sink-b").name("file-sink-b").setParallelism(gatedB.getParallelism());
                break;
            }
            default:
                throw new IllegalArgumentException(
                        "--topology must be keyed, chained, two-sinks, windowed or kafka, got '" + topology + "'");
        }
        return "bluegreen-example " + topology + " " + version + " " + c;
    }

    /** The gate as an operator before {@code sink}, or inside its writer. */
    private static void sink(DataStream<String> lines, GateProcessFunction<String> gate, FileSink<String> sink, String placement) {
        if (placement.equals("sink")) {
            lines.sinkTo(BlueGreenSinks.gated(sink, gate)).uid("file-sink").name("file-sink");
        } else {
            BlueGreenSinks.sinkTo(lines, gate, sink, "file-sink");
        }
    }

    /**
     * 1 s tumbling event-time windows per key that emit their records, in arrival order, when they
     * fire: an on-time result that exists only in window state until the watermark passes the
     * window's end, which is what a handover must not lose.
     */
    private static DataStream<Event> windowed(DataStream<Event> counted) {
        return counted.keyBy(e -> e.key, Types.LONG)
                .window(TumblingEventTimeWindows.of(Duration.ofSeconds(1)))
                .process(new EmitWindow()).uid("window").name("window");
    }

    /** Emits copies of a window's records with the window's end - 1 ms as their event time (their timestamp already is). */
    static final class EmitWindow extends ProcessWindowFunction<Event, Event, Long, TimeWindow> {
        private static final long serialVersionUID = 1L;

        @Override
        public void process(Long key, Context ctx, Iterable<Event> records, Collector<Event> out) {
            for (Event e : records) {
                out.collect(e.withEventTime(ctx.window().maxTimestamp()));
            }
        }
    }

    /** A copy of the record with its event time {@code skewMs} later: a branch that runs ahead. */
    static final class Skew implements MapFunction<Event, Event> {
        private static final long serialVersionUID = 1L;
        private final long skewMs;

        Skew(long skewMs) {
            this.skewMs = skewMs;
        }

        @Override
        public Event map(Event e) {
            return e.withEventTime(e.eventTime + skewMs);
        }
    }

    private static int idleSplit(Map<String, String> args) {
        return "all".equals(args.get("idle-split")) ? Records.ALL_SPLITS : intArg(args, "idle-split", 1);
    }

    private static DataStream<Event> counted(DataStream<Event> events) {
        return events.keyBy(e -> e.key, Types.LONG).process(new RunningCount()).uid("running-count").name("running-count");
    }

    /**
     * An exactly-once row-format FileSink committing on checkpoints, part files {@code part-<color>-...}
     * ({@link BlueGreenSinks#rowFormat}); with {@code --rolling default}, FileSink's default rolling
     * policy as a user would write it, which {@link BlueGreenSinks#sinkTo} refuses at job start.
     */
    private static FileSink<String> fileSink(Path dir, Color color, String rolling) {
        SimpleStringEncoder<String> encoder = new SimpleStringEncoder<>("UTF-8");
        switch (rolling) {
            case "on-checkpoint":
                return BlueGreenSinks.rowFormat(dir, encoder, color)
                        .withBucketAssigner(new BasePathBucketAssigner<>())
                        .build();
            case "default":
                return FileSink.forRowFormat(dir, encoder)
                        .withBucketAssigner(new BasePathBucketAssigner<>())
                        .withOutputFileConfig(BlueGreenSinks.outputFileConfig("part", color))
                        .build();
            default:
                throw new IllegalArgumentException("--rolling must be on-checkpoint or default, got '" + rolling + "'");
        }
    }

    private static StateSource stateSource(Map<String, String> args, Color color) {
        String kind = args.getOrDefault("state-source", "sidecar");
        switch (kind) {
            case "sidecar": {
                String url = System.getenv("BLUEGREEN_SIDECAR_URL");
                return new SidecarStateSource(URI.create(url == null || url.isEmpty() ? "http://127.0.0.1:8787" : url),
                        Duration.ofSeconds(30));
            }
            case "static-running":
                return StaticStateSource.of(CoordinationState.of(0, color, Stage.RUNNING,
                        WatermarkStage.WATERMARK_NOT_SET, 0, 60_000));
            case "static-handover": {
                if (!args.containsKey("w")) {
                    throw new IllegalArgumentException("--state-source static-handover needs --w");
                }
                Color to = color(args.getOrDefault("handover-to", "GREEN"), "--handover-to");
                return StaticStateSource.of(CoordinationState.of(1, to, Stage.TRANSITIONING,
                        WatermarkStage.WATERMARK_SET, longArg(args, "w", 0), 60_000));
            }
            default:
                throw new IllegalArgumentException(
                        "--state-source must be sidecar, static-running or static-handover, got '" + kind + "'");
        }
    }

    private static Color color(String raw, String from) {
        if (raw == null || raw.isEmpty()) {
            throw new IllegalArgumentException(from + " is not set: the job needs its color, BLUE or GREEN "
                    + "(the controller sets BLUEGREEN_COLOR in the pod; locally pass --color)");
        }
        try {
            return Color.valueOf(raw);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(from + " must be BLUE or GREEN, got '" + raw + "'");
        }
    }

    private static long longArg(Map<String, String> args, String key, long dflt) {
        String v = args.get(key);
        if (v == null) {
            return dflt;
        }
        try {
            return Long.parseLong(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("--" + key + " must be an integer, got '" + v + "'");
        }
    }

    private static int intArg(Map<String, String> args, String key, int dflt) {
        long v = longArg(args, key, dflt);
        if (v < Integer.MIN_VALUE || v > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("--" + key + " is out of range: " + v);
        }
        return (int) v;
    }

    /**
     * Formats a counted event as an output line (color and version fixed per job); fails the task
     * once whenever the fail-trigger file appears (looked for at most every 100 ms).
     */
    static final class ToLine implements MapFunction<Event, String> {
        private static final long serialVersionUID = 1L;
        private final String color;
        private final String version;
        private final String failTrigger;
        private transient long nextLookNanos;

        ToLine(String color, String version, String failTrigger) {
            this.color = color;
            this.version = version;
            this.failTrigger = failTrigger;
        }

        @Override
        public String map(Event e) throws Exception {
            if (failTrigger != null) {
                long now = System.nanoTime();
                if (now - nextLookNanos >= 0) {
                    nextLookNanos = now + 100_000_000L;
                    if (Files.deleteIfExists(Paths.get(failTrigger))) {
                        throw new IllegalStateException("fail trigger " + failTrigger + " found: failing this task on cue");
                    }
                }
            }
            return e.line(color, version);
        }
    }
}
