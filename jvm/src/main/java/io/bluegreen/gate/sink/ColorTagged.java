package io.bluegreen.gate.sink;

import io.bluegreen.gate.Color;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Arrays;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * A sink's writer state or committable, tagged with the color of the job that wrote it. State of
 * the other color (or written without {@link ColorIsolatedSink}) is kept as the raw bytes it was
 * restored from: it is never deserialized, handed to the wrapped sink, committed or aborted.
 */
public final class ColorTagged<T> {
    private final Color color;
    private final T value;
    private final int rawVersion;
    private final byte[] raw;

    private ColorTagged(Color color, T value, int rawVersion, byte[] raw) {
        this.color = color;
        this.value = value;
        this.rawVersion = rawVersion;
        this.raw = raw;
    }

    static <T> ColorTagged<T> own(Color color, T value) {
        return new ColorTagged<>(color, value, 0, null);
    }

    /** The color that wrote it; null for state written without {@link ColorIsolatedSink}. */
    public Color color() {
        return color;
    }

    /** Whether it belongs to {@code c} (and so was deserialized for it). */
    public boolean belongsTo(Color c) {
        return raw == null && color == c;
    }

    /** The wrapped sink's object; only for state of the serializer's own color. */
    public T value() {
        if (raw != null) {
            throw new IllegalStateException("sink state of " + (color == null ? "no color" : color) + " is never deserialized");
        }
        return value;
    }

    @Override
    public String toString() {
        return (color == null ? "untagged" : color) + (raw == null ? ":" + value : ":<" + raw.length + " bytes>");
    }

    /**
     * Serializes {@code ColorTagged<T>} as {@code [color byte][inner version][inner bytes]} under
     * {@link #VERSION}; reads any other version as untagged state of the wrapped serializer
     * (a job that ran without {@link ColorIsolatedSink}). Only state of {@code own} is deserialized.
     */
    public static final class Serializer<T> implements SimpleVersionedSerializer<ColorTagged<T>> {
        /** The version of tagged state; chosen far from the small versions sinks use. */
        public static final int VERSION = 0x42470001;

        private final SimpleVersionedSerializer<T> inner;
        private final Color own;

        /** Tags with, and deserializes only, {@code own}. */
        public Serializer(SimpleVersionedSerializer<T> inner, Color own) {
            this.inner = inner;
            this.own = own;
        }

        @Override
        public int getVersion() {
            return VERSION;
        }

        @Override
        public byte[] serialize(ColorTagged<T> obj) throws IOException {
            int version = obj.raw != null ? obj.rawVersion : inner.getVersion();
            byte[] body = obj.raw != null ? obj.raw : inner.serialize(obj.value);
            ByteArrayOutputStream bytes = new ByteArrayOutputStream(body.length + 5);
            DataOutputStream out = new DataOutputStream(bytes);
            out.writeByte(obj.color == null ? 0 : obj.color == Color.BLUE ? 1 : 2);
            out.writeInt(version);
            out.write(body);
            out.flush();
            return bytes.toByteArray();
        }

        @Override
        public ColorTagged<T> deserialize(int version, byte[] serialized) throws IOException {
            if (version != VERSION) {
                return new ColorTagged<>(null, null, version, serialized);
            }
            DataInputStream in = new DataInputStream(new ByteArrayInputStream(serialized));
            int c = in.readUnsignedByte();
            if (c > 2) {
                throw new IOException("corrupt color tag " + c + " in sink state");
            }
            Color color = c == 0 ? null : c == 1 ? Color.BLUE : Color.GREEN;
            int innerVersion = in.readInt();
            byte[] body = Arrays.copyOfRange(serialized, 5, serialized.length);
            if (color != null && color == own) {
                return own(color, inner.deserialize(innerVersion, body));
            }
            return new ColorTagged<>(color, null, innerVersion, body);
        }
    }
}
