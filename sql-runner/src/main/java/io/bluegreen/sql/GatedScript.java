package io.bluegreen.sql;

import io.bluegreen.gate.Color;
import io.bluegreen.gate.GateProcessFunction;
import io.bluegreen.gate.GateSinkWrapper;
import io.bluegreen.gate.StateSource;
import io.bluegreen.gate.sink.BlueGreenSinks;
import io.bluegreen.gate.sink.ColorIsolatedSink;
import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.connector.file.sink.FileSink;
import org.apache.flink.core.fs.Path;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.TableException;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.api.internal.TableEnvironmentImpl;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ContextResolvedTable;
import org.apache.flink.table.catalog.ResolvedCatalogBaseTable;
import org.apache.flink.table.catalog.ResolvedCatalogTable;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.delegation.Parser;
import org.apache.flink.table.operations.BeginStatementSetOperation;
import org.apache.flink.table.operations.EndStatementSetOperation;
import org.apache.flink.table.operations.ModifyOperation;
import org.apache.flink.table.operations.Operation;
import org.apache.flink.table.operations.QueryOperation;
import org.apache.flink.table.operations.SinkModifyOperation;
import org.apache.flink.table.operations.StatementSetOperation;
import org.apache.flink.table.operations.command.SetOperation;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.DataTypeQueryable;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TimestampKind;
import org.apache.flink.table.types.logical.TimestampType;

/**
 * Builds a SQL script into one DataStream job with every INSERT gated (docs/sql.md).
 *
 * <p>Statements are parsed one at a time by Flink's own parser, in script order. DDL and every
 * other statement that is not an INSERT are executed as the SQL client would
 * ({@code TableEnvironment#executeSql}); each INSERT (alone or in a statement set) is planned as a
 * query, converted to a {@code DataStream<RowData>} ({@code StreamTableEnvironment#toDataStream},
 * which makes the query's one event-time attribute the record's timestamp), given stable operator
 * uids, and written through the gate into a {@link FileSink} isolated per color at the sink table's
 * path. A statement that cannot be handed over exactly once is refused before anything runs
 * ({@link RefusedStatementException}).
 */
public final class GatedScript {
    /** What this runner can write: the filesystem connector with the csv format. */
    static final String CONNECTOR = "filesystem";

    private final StreamTableEnvironment tEnv;
    private final Color color;
    private final Supplier<StateSource> states;
    private final List<String> refusals = new ArrayList<>();
    private final List<Insert> inserts = new ArrayList<>();
    private final Map<String, Integer> sinkNames = new LinkedHashMap<>();

    /** One gated INSERT, once the script is planned. */
    public static final class Insert {
        /** The sink table, as the script names it (catalog.database.table). */
        public final String table;
        /** The event-time column whose value the gate decides by. */
        public final String rowtimeColumn;
        /** The uid prefix of the statement's operators; the gate's uid is {@code bluegreen-gate-<name>}. */
        public final String name;

        Insert(String table, String rowtimeColumn, String name) {
            this.table = table;
            this.rowtimeColumn = rowtimeColumn;
            this.name = name;
        }

        @Override
        public String toString() {
            return table + " (event time " + rowtimeColumn + ", uids " + name + "/…)";
        }
    }

    /**
     * A builder into {@code tEnv} (and its execution environment) for the job of {@code color},
     * whose gates learn the coordination state from {@code states}.
     */
    public GatedScript(StreamTableEnvironment tEnv, Color color, Supplier<StateSource> states) {
        this.tEnv = tEnv;
        this.color = color;
        this.states = states;
        // The planner's own uids are switched off: this class gives every operator a uid derived
        // from its sink table and its place in that statement's plan (see assignUids).
        tEnv.getConfig().set(ExecutionConfigOptions.TABLE_EXEC_UID_GENERATION, ExecutionConfigOptions.UidGeneration.DISABLED);
    }

    /**
     * Runs the script's DDL and builds its gated INSERTs into the execution environment; returns
     * them. Nothing is submitted: call {@code env.execute} after.
     *
     * @throws RefusedStatementException naming every statement that cannot be handed over
     */
    public List<Insert> build(String script) {
        Parser parser = ((TableEnvironmentImpl) tEnv).getParser();
        for (String statement : ScriptSplitter.split(script)) {
            List<Operation> operations = parser.parse(statement);
            for (Operation operation : operations) {
                if (operation instanceof SinkModifyOperation) {
                    insert((SinkModifyOperation) operation);
                } else if (operation instanceof StatementSetOperation) {
                    for (ModifyOperation inner : ((StatementSetOperation) operation).getOperations()) {
                        if (inner instanceof SinkModifyOperation) {
                            insert((SinkModifyOperation) inner);
                        } else {
                            refusals.add("statement set: " + inner.asSummaryString()
                                    + " is not an INSERT INTO a table; only INSERTs are gated");
                        }
                    }
                } else if (operation instanceof BeginStatementSetOperation || operation instanceof EndStatementSetOperation) {
                    // Every INSERT of the script runs in one job anyway.
                    continue;
                } else if (operation instanceof ModifyOperation) {
                    refusals.add(first(statement) + ": writes into a table other than by INSERT INTO (e.g. CREATE TABLE AS);"
                            + " create the table with CREATE TABLE, then INSERT INTO it");
                } else if (operation instanceof QueryOperation) {
                    refusals.add(first(statement) + ": a SELECT without INSERT INTO has no sink to hand over;"
                            + " INSERT INTO a filesystem table instead");
                } else if (operation instanceof SetOperation) {
                    // SET 'key' = 'value' (the SQL client's command; executeSql does not take it).
                    SetOperation set = (SetOperation) operation;
                    if (set.getKey().isEmpty() || set.getValue().isEmpty()) {
                        refusals.add(first(statement) + ": SET without a key and a value lists nothing here; remove it");
                    } else {
                        tEnv.getConfig().set(set.getKey().get(), set.getValue().get());
                    }
                } else {
                    tEnv.executeSql(statement);
                }
            }
        }
        if (inserts.isEmpty() && refusals.isEmpty()) {
            refusals.add("the script has no INSERT INTO: nothing to run");
        }
        if (!refusals.isEmpty()) {
            throw new RefusedStatementException(refusals);
        }
        return List.copyOf(inserts);
    }

    /**
     * For a Table API program: writes {@code query} into the filesystem table {@code sinkTable}
     * through the gate, as an INSERT of a script is written (checked and refused the same way).
     * Call it instead of {@code query.executeInsert(sinkTable)} or a {@code StatementSet}, once per
     * sink, then {@code env.execute}.
     *
     * @throws RefusedStatementException when the insert cannot be handed over exactly once; do not
     *     execute the environment after that (a refused query may have left its conversion in it)
     */
    public Insert insertInto(Table query, String sinkTable) {
        TableEnvironmentImpl impl = (TableEnvironmentImpl) tEnv;
        ContextResolvedTable sink = impl.getCatalogManager().getTableOrError(
                impl.getCatalogManager().qualifyIdentifier(impl.getParser().parseIdentifier(sinkTable)));
        int before = inserts.size();
        insert(sink, query.getQueryOperation(), Map.of(), null);
        if (!refusals.isEmpty()) {
            RefusedStatementException e = new RefusedStatementException(refusals);
            refusals.clear();
            throw e;
        }
        return inserts.get(before);
    }

    private void insert(SinkModifyOperation op) {
        insert(op.getContextResolvedTable(), op.getChild(), op.getStaticPartitions(), op.getTargetColumns());
    }

    private void insert(ContextResolvedTable sink, QueryOperation child, Map<String, String> staticPartitions,
            int[][] targetColumns) {
        String table = sink.getIdentifier().asSummaryString();
        String prefix = "INSERT INTO " + table + ": ";
        ResolvedCatalogBaseTable<?> base = sink.getResolvedTable();
        if (!(base instanceof ResolvedCatalogTable)) {
            refusals.add(prefix + "the sink is a view, not a table");
            return;
        }
        ResolvedCatalogTable catalogTable = (ResolvedCatalogTable) base;
        Map<String, String> options = catalogTable.getOptions();
        String connector = options.getOrDefault("connector", "");
        String format = options.getOrDefault("format", "");
        if (!CONNECTOR.equals(connector) || !"csv".equals(format)) {
            refusals.add(prefix + "the sink has connector '" + connector + "' and format '" + format + "'; this runner gates"
                    + " sinks with 'connector' = 'filesystem' and 'format' = 'csv' (the sink's state and files isolated per"
                    + " color, committed on checkpoints); for another sink write the job with the DataStream API and"
                    + " BlueGreenSinks (docs/jvm.md)");
            return;
        }
        if (!options.containsKey("path")) {
            refusals.add(prefix + "the filesystem sink has no 'path'");
            return;
        }
        if (!catalogTable.getPartitionKeys().isEmpty() || !staticPartitions.isEmpty()) {
            refusals.add(prefix + "the sink is PARTITIONED BY " + catalogTable.getPartitionKeys()
                    + "; partitioned filesystem sinks are not gated yet: drop PARTITIONED BY");
            return;
        }
        if (targetColumns != null) {
            refusals.add(prefix + "an explicit column list (INSERT INTO t (a, b) ...) is not supported yet:"
                    + " select every column of the sink, in its order");
            return;
        }
        Table query = ((TableEnvironmentImpl) tEnv).createTable(child);
        ResolvedSchema schema = query.getResolvedSchema();
        List<Column> columns = schema.getColumns();
        List<String> rowtimes = columns.stream()
                .filter(c -> isRowtime(c.getDataType().getLogicalType()))
                .map(Column::getName)
                .collect(Collectors.toList());
        String names = columns.stream().map(Column::getName).collect(Collectors.joining(", "));
        if (rowtimes.size() > 1) {
            refusals.add(prefix + "the query has " + rowtimes.size() + " event-time columns (" + String.join(", ", rowtimes)
                    + "); keep exactly one, the one that decides which color owns a row (CAST the others to TIMESTAMP(3)"
                    + " or TIMESTAMP_LTZ(3))");
            return;
        }
        DataType rowDataType = schema.toPhysicalRowDataType().bridgedTo(RowData.class);
        DataStream<RowData> rows = null;
        String updates = null;
        try {
            rows = tEnv.toDataStream(query, rowDataType);
        } catch (TableException | ValidationException e) {
            String message = String.valueOf(e.getMessage());
            if (message.contains("update") || message.contains("changes")) {
                updates = message;
            } else {
                refusals.add(prefix + "cannot be planned as a stream of rows: " + message);
                return;
            }
        }
        if (updates != null) {
            refusals.add(prefix + "the query produces updates (its result rows change after they are written, e.g. an"
                    + " unwindowed GROUP BY, a regular join or a non-windowed OVER/TopN/deduplication)"
                    + (rowtimes.isEmpty() ? " and has no event-time column (columns: " + names + ")" : "")
                    + ": an updated row cannot be owned by one color by its event time. Aggregate in event-time windows"
                    + " instead (GROUP BY window_start, window_end over TUMBLE/HOP/CUMULATE(TABLE t, DESCRIPTOR(ts), ...))"
                    + " and select window_time, or write an append-only query");
            return;
        }
        if (rowtimes.isEmpty()) {
            refusals.add(prefix + "no column of the query is an event-time attribute (columns: " + names + "), so the gate"
                    + " cannot tell which color owns a row. Select the source table's event-time column (the one its"
                    + " WATERMARK is declared on) or window_time of a window TVF, and add it to the sink table");
            return;
        }
        if (plannedRowtime(rows.getTransformation()) != columnIndex(columns, rowtimes.get(0))) {
            refusals.add(prefix + "the planner drops the event-time attribute " + rowtimes.get(0) + " (columns: " + names
                    + "), as it does for a regular join: a joined row is written whenever its match arrives, however late,"
                    + " so no event time tells which color owns it. Join with an interval join (a.ts BETWEEN b.ts -"
                    + " INTERVAL ... AND b.ts + INTERVAL ..., both sides' event-time columns) or a window join instead");
            return;
        }
        List<Column> sinkColumns = catalogTable.getResolvedSchema().getColumns().stream()
                .filter(Column::isPhysical)
                .collect(Collectors.toList());
        String mismatch = mismatch(columns, sinkColumns);
        if (mismatch != null) {
            refusals.add(prefix + mismatch);
            return;
        }
        String name = uniqueName(sink.getIdentifier().getObjectName());
        assignUids(rows.getTransformation(), name);
        RowType sinkRowType = (RowType) catalogTable.getResolvedSchema().toPhysicalRowDataType().getLogicalType();
        String delimiter = options.get("csv.field-delimiter");
        FileSink<RowData> files = BlueGreenSinks.rowFormat(new Path(options.get("path")),
                new CsvEncoder(sinkRowType, delimiter == null || delimiter.isEmpty() ? null : delimiter.charAt(0)), color).build();
        GateProcessFunction<RowData> gate = new GateProcessFunction<>(color, states.get());
        SingleOutputStreamOperator<RowData> gated = GateSinkWrapper.gate(rows, gate, GateSinkWrapper.UID + "-" + name);
        gated.sinkTo(ColorIsolatedSink.wrap(files, color))
                .uid("sink-" + name)
                .name("sink " + table)
                .setParallelism(gated.getParallelism());
        inserts.add(new Insert(table, rowtimes.get(0), name));
    }

    /** Why the query's columns cannot be written into the sink's, or null. */
    private static String mismatch(List<Column> query, List<Column> sink) {
        if (query.size() != sink.size()) {
            return "the query has " + query.size() + " columns (" + names(query) + ") and the sink table " + sink.size()
                    + " (" + names(sink) + "); make them the same, in the same order";
        }
        for (int i = 0; i < query.size(); i++) {
            LogicalType q = comparable(query.get(i).getDataType().getLogicalType());
            LogicalType s = comparable(sink.get(i).getDataType().getLogicalType());
            if (!q.equals(s)) {
                return "column " + (i + 1) + " of the query, " + query.get(i).getName() + " " + q.asSummaryString()
                        + ", does not have the type of the sink's column " + sink.get(i).getName() + " " + s.asSummaryString()
                        + "; CAST it in the query (not the event-time column) or change the sink table";
            }
        }
        return null;
    }

    private static int columnIndex(List<Column> columns, String name) {
        for (int i = 0; i < columns.size(); i++) {
            if (columns.get(i).getName().equals(name)) {
                return i;
            }
        }
        return -1;
    }

    /**
     * The index of the event-time attribute in the rows the planner hands to {@code toDataStream}'s
     * conversion (whose rowtime becomes the record's timestamp, the gate's event time), or -1. The
     * query's resolved schema can show a rowtime the optimized plan no longer has: the planner
     * materializes time attributes into plain timestamps at a regular join.
     */
    static int plannedRowtime(Transformation<?> conversion) {
        for (Transformation<?> input : conversion.getInputs()) {
            if (input.getOutputType() instanceof DataTypeQueryable) {
                LogicalType type = ((DataTypeQueryable) input.getOutputType()).getDataType().getLogicalType();
                List<LogicalType> fields = type.getChildren();
                for (int i = 0; i < fields.size(); i++) {
                    if (isRowtime(fields.get(i))) {
                        return i;
                    }
                }
            }
        }
        return -1;
    }

    private static String names(List<Column> columns) {
        return columns.stream().map(Column::getName).collect(Collectors.joining(", "));
    }

    /** The type without nullability and without the time attribute kind. */
    private static LogicalType comparable(LogicalType t) {
        if (t instanceof TimestampType) {
            return new TimestampType(true, ((TimestampType) t).getPrecision());
        }
        if (t instanceof LocalZonedTimestampType) {
            return new LocalZonedTimestampType(true, ((LocalZonedTimestampType) t).getPrecision());
        }
        return t.copy(true);
    }

    static boolean isRowtime(LogicalType t) {
        if (t instanceof TimestampType) {
            return ((TimestampType) t).getKind() == TimestampKind.ROWTIME;
        }
        if (t instanceof LocalZonedTimestampType) {
            return ((LocalZonedTimestampType) t).getKind() == TimestampKind.ROWTIME;
        }
        return false;
    }

    private String uniqueName(String objectName) {
        String base = objectName.toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9_]+", "_");
        int n = sinkNames.merge(base, 1, Integer::sum);
        return n == 1 ? base : base + "_" + n;
    }

    /**
     * Gives every operator of one statement's plan the uid {@code sql-<name>-<n>-<Kind>}: n its place
     * in a depth-first walk from the sink side, Kind the operator's kind (its name up to the first
     * bracket, e.g. TableSourceScan, WindowAggregate). The same statement plans to the same uids in
     * blue and green, whatever the other statements and the parallelism, so green restores blue's
     * source positions and window state; the planner's own uids are off (the default,
     * table.exec.uid.generation PLAN_ONLY, gives none without a compiled plan, and Flink's generated
     * hashes change with chaining and therefore with parallelism).
     */
    static void assignUids(Transformation<?> root, String name) {
        Map<Transformation<?>, Boolean> seen = new IdentityHashMap<>();
        int[] counter = {0};
        walk(root, name, seen, counter);
    }

    private static void walk(Transformation<?> t, String name, Map<Transformation<?>, Boolean> seen, int[] counter) {
        if (seen.put(t, Boolean.TRUE) != null) {
            return;
        }
        for (Transformation<?> input : t.getInputs()) {
            walk(input, name, seen, counter);
        }
        t.setUid("sql-" + name + "-" + counter[0]++ + "-" + kind(t.getName()));
    }

    static String kind(String operatorName) {
        String n = operatorName == null ? "op" : operatorName;
        int cut = n.length();
        for (char c : new char[] {'(', '['}) {
            int i = n.indexOf(c);
            if (i >= 0 && i < cut) {
                cut = i;
            }
        }
        String k = n.substring(0, cut).trim().replaceAll("[^A-Za-z0-9_]+", "_");
        return k.isEmpty() ? "op" : k;
    }

    private static String first(String statement) {
        String s = statement.trim().replaceAll("\\s+", " ");
        return s.length() > 60 ? s.substring(0, 60) + "…" : s;
    }
}
