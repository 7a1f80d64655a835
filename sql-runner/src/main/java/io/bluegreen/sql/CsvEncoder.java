package io.bluegreen.sql;

import java.io.IOException;
import java.io.OutputStream;
import org.apache.flink.api.common.serialization.Encoder;
import org.apache.flink.formats.csv.CsvRowDataSerializationSchema;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;

/**
 * Writes each row as the filesystem connector's {@code csv} format does: Flink's own
 * {@link CsvRowDataSerializationSchema} for the sink table's physical row type, then a newline.
 */
final class CsvEncoder implements Encoder<RowData> {
    private static final long serialVersionUID = 1L;

    private final RowType rowType;
    private final Character fieldDelimiter;
    private transient CsvRowDataSerializationSchema schema;

    CsvEncoder(RowType rowType, Character fieldDelimiter) {
        this.rowType = rowType;
        this.fieldDelimiter = fieldDelimiter;
    }

    @Override
    public void encode(RowData row, OutputStream stream) throws IOException {
        if (schema == null) {
            CsvRowDataSerializationSchema.Builder builder = new CsvRowDataSerializationSchema.Builder(rowType);
            if (fieldDelimiter != null) {
                builder.setFieldDelimiter(fieldDelimiter);
            }
            schema = builder.build();
            try {
                schema.open(null);
            } catch (Exception e) {
                throw new IOException("cannot open the csv format for " + rowType, e);
            }
        }
        stream.write(schema.serialize(row));
        stream.write('\n');
    }
}
