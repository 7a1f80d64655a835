package io.bluegreen.sql;

import io.bluegreen.gate.Color;
import io.bluegreen.gate.CoordinationState;
import io.bluegreen.gate.SidecarStateSource;
import io.bluegreen.gate.Stage;
import io.bluegreen.gate.StateSource;
import io.bluegreen.gate.StaticStateSource;
import io.bluegreen.gate.WatermarkStage;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Supplier;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@code bluegreen-sql-runner}: runs an unchanged Flink SQL script as one streaming job with every
 * INSERT gated for a blue/green handover (docs/sql.md). The job's color comes from
 * {@code BLUEGREEN_COLOR} (set by the controller), the gates find the sidecar through
 * {@code BLUEGREEN_SIDECAR_URL}.
 */
public final class SqlRunner {
    private static final Logger LOG = LoggerFactory.getLogger(SqlRunner.class);

    /** Printed with every argument error. */
    public static final String USAGE = String.join("\n",
            "usage: SqlRunner --script FILE [--key value ...]",
            "  --script FILE                the SQL script (e.g. a mounted ConfigMap's file): DDL, SET, INSERT INTO,",
            "                               EXECUTE STATEMENT SET BEGIN ... END; every INSERT runs in one job, gated",
            "  --color BLUE|GREEN           (default: env BLUEGREEN_COLOR, which the controller sets)",
            "  --job-name NAME              (default: bluegreen-sql <script file name> <color>)",
            "  --var NAME=VALUE             replaces ${NAME} in the script (repeatable), e.g. a path that differs per cluster",
            "  --state-source sidecar|static-running   (default sidecar; static-running passes every record and is",
            "                               for tests only: it shows what an ungated handover writes)");

    private static final Set<String> KNOWN = Set.of("script", "color", "job-name", "state-source", "var");

    private SqlRunner() {}

    public static void main(String[] argv) throws Exception {
        Map<String, String> args = parse(argv);
        String script = substitute(read(args.get("script")), args.getOrDefault("var", ""));
        Color color = color(args.containsKey("color") ? args.get("color") : System.getenv("BLUEGREEN_COLOR"),
                args.containsKey("color") ? "--color" : "env BLUEGREEN_COLOR");
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        if (env.getCheckpointConfig().getCheckpointInterval() <= 0) {
            throw new IllegalArgumentException("checkpointing is off: set execution.checkpointing.interval in the"
                    + " FlinkDeployment's flinkConfiguration (the filesystem sinks commit their files on checkpoints)");
        }
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        List<GatedScript.Insert> inserts = new GatedScript(tEnv, color, states(args, color)).build(script);
        for (GatedScript.Insert insert : inserts) {
            LOG.info("bluegreen-sql-runner: gated INSERT INTO {}", insert);
        }
        String name = args.getOrDefault("job-name",
                "bluegreen-sql " + Paths.get(args.get("script")).getFileName() + " " + color.name());
        env.execute(name);
    }

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
            String v = argv[i + 1];
            if (k.equals("--var")) {
                if (v.indexOf('=') <= 0) {
                    throw new IllegalArgumentException("--var needs NAME=VALUE, got '" + v + "'\n" + USAGE);
                }
                args.merge("var", v, (a, b) -> a + "\n" + b);
            } else {
                args.put(k.substring(2), v);
            }
        }
        if (!args.containsKey("script")) {
            throw new IllegalArgumentException("--script is required\n" + USAGE);
        }
        return args;
    }

    /** {@code script} with every {@code ${NAME}} of {@code vars} (lines NAME=VALUE) replaced; an unknown ${NAME} is an error. */
    static String substitute(String script, String vars) {
        String out = script;
        for (String line : vars.split("\n")) {
            if (!line.isEmpty()) {
                int eq = line.indexOf('=');
                out = out.replace("${" + line.substring(0, eq) + "}", line.substring(eq + 1));
            }
        }
        java.util.regex.Matcher left = java.util.regex.Pattern.compile("\\$\\{[A-Za-z_][A-Za-z0-9_]*\\}").matcher(out);
        if (left.find()) {
            throw new IllegalArgumentException("the script uses " + left.group() + " but no --var sets it");
        }
        return out;
    }

    private static String read(String path) throws IOException {
        try {
            return new String(Files.readAllBytes(Paths.get(path)), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IOException("cannot read the SQL script " + path + ": " + e.getMessage(), e);
        }
    }

    static Supplier<StateSource> states(Map<String, String> args, Color color) {
        String kind = args.getOrDefault("state-source", "sidecar");
        switch (kind) {
            case "sidecar":
                return SidecarStateSource::fromEnvironment;
            case "static-running":
                return () -> StaticStateSource.of(CoordinationState.of(0, color, Stage.RUNNING,
                        WatermarkStage.WATERMARK_NOT_SET, 0, 60_000));
            default:
                throw new IllegalArgumentException("--state-source must be sidecar or static-running, got '" + kind + "'");
        }
    }

    static Color color(String raw, String from) {
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
}
