// The file-system steps of a tracked run's commit, done where Spark runs (a Spark Connect
// server, whose client has no Hadoop FileSystem and may not see the disk at all).
//
// Registered by xor_ack_dynamodb/spark/connect_files.py as a Java UDF of three strings
// (operation, path, argument) returning a string; shipped to the server as a session
// artifact (xor-ack-files.jar, built from this file by `make spark-jar`). Every operation
// goes through Hadoop's FileSystem with the session's Hadoop configuration, so it works for
// any path Spark itself can write (file:, hdfs:, s3a:, gs:, abfs: ...). Every operation can
// be run twice with the same outcome (a retried task, a plan evaluated again).
package org.xorack.spark;

import java.io.ByteArrayOutputStream;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileAlreadyExistsException;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkEnv;
import org.apache.spark.deploy.SparkHadoopUtil;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.api.java.UDF3;

public class XorAckFiles implements UDF3<String, String, String, String> {
    private static final long serialVersionUID = 1L;
    /** Separates the entries of an answer (a character no file name holds). */
    private static final String SEP = "\u0000";
    /** Largest file ``read`` returns (the manifest is a few kilobytes). */
    private static final long MAX_READ = 16L << 20;

    private static Configuration conf() {
        scala.Option<SparkSession> active = SparkSession.getActiveSession();
        if (active.isDefined()) {
            return active.get().sessionState().newHadoopConf();
        }
        return SparkHadoopUtil.get().newConfiguration(SparkEnv.get().conf());
    }

    @Override
    public String call(String op, String target, String arg) throws Exception {
        Path path = new Path(target);
        FileSystem fs = path.getFileSystem(conf());
        switch (op) {
            case "list":
                return list(fs, path, arg, false);
            case "tree":
                return list(fs, path, arg, true);
            case "link":
                String link = link(fs, path);
                return link == null ? "none" : link;
            case "write":
                return write(fs, path, arg);
            case "rename":
                return rename(fs, path, new Path(arg));
            case "fill":
                return fill(fs, path, arg);
            case "delete":
                if (fs.exists(path)) {
                    fs.delete(path, true);
                }
                return "ok";
            default:
                throw new IllegalArgumentException("unknown operation " + op);
        }
    }

    /** "link" then where it leads (every link on the way followed), for a local link; else null. */
    private static String link(FileSystem fs, Path path) throws Exception {
        java.net.URI uri = fs.makeQualified(path).toUri();
        if (!"file".equals(uri.getScheme())) {
            return null;
        }
        java.nio.file.Path local = Paths.get(uri);
        if (!Files.isSymbolicLink(local)) {
            return null;
        }
        java.nio.file.Path to = Files.exists(local)
                ? local.toRealPath()
                : local.resolveSibling(Files.readSymbolicLink(local)).normalize();
        return "link" + SEP + to;
    }

    /**
     * "absent", "file", or "dir" then the entry names; with ``wanted``: that entry's text too;
     * with ``tree``: every entry at any depth too, relative, a folder's ending in "/".  A local
     * path that is a symbolic link: "link" then the path it leads to (Hadoop's own listing
     * follows it, and a rename would replace the link, not its folder).
     */
    private static String list(FileSystem fs, Path path, String wanted, boolean tree)
            throws Exception {
        String link = link(fs, path);
        if (link != null) {
            return link;
        }
        if (!fs.exists(path)) {
            return "absent";
        }
        if (!fs.getFileStatus(path).isDirectory()) {
            return "file";
        }
        String[] names = names(fs, path).keySet().toArray(new String[0]);
        Arrays.sort(names);
        StringBuilder out = new StringBuilder("dir");
        String text = null;
        for (String name : names) {
            out.append(SEP).append("n:").append(name);
            if (wanted != null && !wanted.isEmpty() && name.equals(wanted)) {
                text = read(fs, new Path(path, name));
            }
        }
        if (tree) {
            walk(fs, path, "", out);
        }
        if (text != null) {
            out.append(SEP).append("t:").append(text);
        }
        return out.toString();
    }

    /** Every entry under ``path`` as an "r:" part, relative, a folder's ending in "/". */
    private static void walk(FileSystem fs, Path path, String prefix, StringBuilder out)
            throws Exception {
        for (Map.Entry<String, Boolean> entry : names(fs, path).entrySet()) {
            String name = prefix + entry.getKey();
            if (entry.getValue()) {
                out.append(SEP).append("r:").append(name).append('/');
                walk(fs, new Path(path, entry.getKey()), name + "/", out);
            } else {
                out.append(SEP).append("r:").append(name);
            }
        }
    }

    /**
     * The entries of the folder ``path``, each with whether it is a folder to descend into.
     * A local folder is read from the disk itself: Hadoop's local listing leaves out a
     * symbolic link whose target is missing and every ".X.crc" name, which a user's files
     * may be (a folder judged ours by what it cannot see would be replaced, theirs with it);
     * a link is an entry, never descended into.
     */
    private static Map<String, Boolean> names(FileSystem fs, Path path) throws Exception {
        Map<String, Boolean> found = new TreeMap<>();
        java.net.URI uri = fs.makeQualified(path).toUri();
        if ("file".equals(uri.getScheme())) {
            try (DirectoryStream<java.nio.file.Path> entries =
                    Files.newDirectoryStream(Paths.get(uri))) {
                for (java.nio.file.Path entry : entries) {
                    boolean folder = Files.isDirectory(entry, LinkOption.NOFOLLOW_LINKS);
                    found.put(entry.getFileName().toString(), folder);
                }
            }
            return found;
        }
        for (FileStatus entry : fs.listStatus(path)) {
            found.put(entry.getPath().getName(), entry.isDirectory());
        }
        return found;
    }

    private static String read(FileSystem fs, Path path) throws Exception {
        if (fs.getFileStatus(path).getLen() > MAX_READ) {
            return null;
        }
        try (InputStream in = fs.open(path)) {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            byte[] buffer = new byte[65536];
            int n;
            while ((n = in.read(buffer)) > 0) {
                bytes.write(buffer, 0, n);
            }
            byte[] data = bytes.toByteArray();
            String text = new String(data, StandardCharsets.UTF_8);
            // Not UTF-8: no text (a manifest that is not ours).
            return Arrays.equals(text.getBytes(StandardCharsets.UTF_8), data) ? text : null;
        }
    }

    /** Create ``path`` holding ``text``, never over another file (the same text: done). */
    private static String write(FileSystem fs, Path path, String text) throws Exception {
        byte[] data = text.getBytes(StandardCharsets.UTF_8);
        if (fs.exists(path)) {
            String found = read(fs, path);
            if (text.equals(found)) {
                return "ok";
            }
            throw new FileAlreadyExistsException(path + " exists");
        }
        try (OutputStream out = fs.create(path, false)) {
            out.write(data);
        }
        return "ok";
    }

    /** Rename; ``source`` gone and ``target`` there means an earlier run of this did it. */
    private static String rename(FileSystem fs, Path source, Path target) throws Exception {
        boolean there = fs.exists(target);
        if (!fs.exists(source)) {
            if (there) {
                return "ok";
            }
            throw new java.io.FileNotFoundException(source + " does not exist");
        }
        if (there || !fs.rename(source, target)) {
            throw new java.io.IOException("could not rename " + source + " to " + target);
        }
        return "ok";
    }

    /**
     * Move the entries ``arg`` names (after the target folder, all separated by NUL) from
     * the folder ``source`` into it, in that order; on a failure those moved go back. An
     * entry already in the target and gone from the source was moved by an earlier run.
     */
    private static String fill(FileSystem fs, Path source, String arg) throws Exception {
        String[] parts = arg.split("\0", -1);
        Path target = new Path(parts[0]);
        List<String> moved = new ArrayList<>();
        try {
            for (int i = 1; i < parts.length; i++) {
                rename(fs, new Path(source, parts[i]), new Path(target, parts[i]));
                moved.add(parts[i]);
            }
        } catch (Exception failed) {
            for (int i = moved.size() - 1; i >= 0; i--) {
                fs.rename(new Path(target, moved.get(i)), new Path(source, moved.get(i)));
            }
            throw failed;
        }
        return "ok";
    }
}
