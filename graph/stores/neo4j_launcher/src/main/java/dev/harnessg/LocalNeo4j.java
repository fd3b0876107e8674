package dev.harnessg;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

import inet.ipaddr.IPAddressString;
import org.neo4j.configuration.GraphDatabaseInternalSettings;
import org.neo4j.configuration.GraphDatabaseSettings;
import org.neo4j.configuration.connectors.BoltConnector;
import org.neo4j.configuration.connectors.HttpConnector;
import org.neo4j.configuration.helpers.SocketAddress;
import org.neo4j.harness.Neo4j;
import org.neo4j.harness.Neo4jBuilder;
import org.neo4j.harness.Neo4jBuilders;
import org.neo4j.io.ByteUnit;
import org.neo4j.server.configuration.ServerSettings;

/**
 * Starts an in-process Neo4j 5 (community) on loopback and keeps it up until SIGTERM/SIGINT,
 * or until standard input closes when {@code --stop-on-stdin-eof} is given (so a parent that dies
 * never leaves a server behind).
 *
 * <p>Arguments: {@code --dir DIR} working directory (the harness creates the database under it and
 * deletes it on stop), {@code --bolt-port N} and {@code --http-port N} (0 = any free port),
 * {@code --password-file F} (required: the password of user neo4j, read from F's first line, then F is deleted;
 * a file, not an argument, so it never shows in a process list), {@code --page-cache-mb N}, {@code --data-dir D}
 * (optional: open the databases under D, e.g. one {@code neo4j-admin database import full} wrote, instead of a fresh
 * one; D is left in place at stop).
 *
 * <p>Locked down for a machine with a web browser on it: authentication is always on; the HTTP API answers
 * with {@code Access-Control-Allow-Origin: http://127.0.0.1:HTTP_PORT} (its own origin, where Neo4j Browser is
 * served: the Browser needs no CORS, and no other page's script may read a response); {@code LOAD CSV} may not
 * read files ({@code dbms.security.allow_csv_import_from_file_urls=false}, import folder an empty
 * {@code DIR/import}) nor fetch URLs (every IPv4 and IPv6 address is on the Cypher IP blocklist).
 * When ready it prints one line to standard output:
 * {@code HARNESS_G_NEO4J_READY {"bolt": "bolt://127.0.0.1:P", "http": "http://127.0.0.1:Q", "version": "5.26.x"}}
 * and writes the same JSON to {@code --ready-file} if given.
 */
public final class LocalNeo4j {
    private LocalNeo4j() {}

    public static void main(String[] args) throws Exception {
        Map<String, String> opts = parse(args);
        Path dir = Path.of(opts.getOrDefault("--dir", System.getProperty("java.io.tmpdir")));
        Files.createDirectories(dir);
        // free ports are chosen here (not by the server) so the advertised addresses -- which Neo4j Browser
        // connects to -- name the real ports
        int boltPort = port(opts.getOrDefault("--bolt-port", "0"));
        int httpPort = port(opts.getOrDefault("--http-port", "0"));
        long pageCacheMb = Long.parseLong(opts.getOrDefault("--page-cache-mb", "256"));
        String password = readPassword(opts.get("--password-file"));
        Path dataDir = opts.containsKey("--data-dir") ? Path.of(opts.get("--data-dir")).toAbsolutePath() : null;

        Neo4j neo4j;
        try {
            neo4j = start(dir, boltPort, httpPort, pageCacheMb, password, dataDir);
        } catch (RuntimeException | IOException e) {
            // the harness leaves non-daemon threads behind on a failed start: exit, or the JVM never ends
            Throwable root = e;
            while (root.getCause() != null) {
                root = root.getCause();
            }
            System.out.println("HARNESS_G_NEO4J_FAILED " + root.getClass().getSimpleName() + ": " + root.getMessage());
            System.out.flush();
            System.exit(1);
            return;
        }
        CountDownLatch stopped = new CountDownLatch(1);

        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            neo4j.close();
            stopped.countDown();
        }, "harness-g-neo4j-stop"));

        URI bolt = neo4j.boltURI();
        URI http = neo4j.httpURI();
        String version = org.neo4j.kernel.internal.Version.getNeo4jVersion();
        String ready = String.format("{\"bolt\": \"bolt://127.0.0.1:%d\", \"http\": \"http://127.0.0.1:%d\", \"version\": \"%s\"}",
                bolt.getPort(), http.getPort(), version);
        if (opts.containsKey("--ready-file")) {
            Path target = Path.of(opts.get("--ready-file"));
            Path tmp = target.resolveSibling(target.getFileName() + ".tmp");
            Files.writeString(tmp, ready + "\n", StandardCharsets.UTF_8);
            Files.move(tmp, target, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        }
        System.out.println("HARNESS_G_NEO4J_READY " + ready);
        System.out.flush();

        if (opts.containsKey("--stop-on-stdin-eof")) {
            waitForEof(System.in);
            System.exit(0); // runs the shutdown hook
        }
        stopped.await();
    }

    private static Neo4j start(Path dir, int boltPort, int httpPort, long pageCacheMb, String password, Path dataDir)
            throws IOException {
        Path importDir = Files.createDirectories(dir.resolve("import"));
        Neo4jBuilder builder = Neo4jBuilders.newInProcessBuilder(dir);
        if (dataDir != null) {
            // databases (and their transaction logs) a bulk import wrote, instead of the harness's fresh ones
            builder = builder.withConfig(GraphDatabaseSettings.data_directory, dataDir);
        }
        Neo4j neo4j = builder
                .withConfig(BoltConnector.enabled, true)
                .withConfig(BoltConnector.listen_address, new SocketAddress("127.0.0.1", boltPort))
                .withConfig(BoltConnector.advertised_address, new SocketAddress("127.0.0.1", boltPort))
                .withConfig(HttpConnector.enabled, true)
                .withConfig(HttpConnector.listen_address, new SocketAddress("127.0.0.1", httpPort))
                .withConfig(HttpConnector.advertised_address, new SocketAddress("127.0.0.1", httpPort))
                .withConfig(GraphDatabaseSettings.pagecache_memory, ByteUnit.mebiBytes(pageCacheMb))
                .withConfig(GraphDatabaseSettings.auth_enabled, true)
                // the server's own origin instead of the default "*": Neo4j Browser is same-origin and needs no CORS
                .withConfig(ServerSettings.http_access_control_allow_origin, "http://127.0.0.1:" + httpPort)
                .withConfig(GraphDatabaseSettings.allow_file_urls, false)
                .withConfig(GraphDatabaseSettings.load_csv_file_url_root, importDir)
                .withConfig(GraphDatabaseInternalSettings.cypher_ip_blocklist,
                        List.of(new IPAddressString("0.0.0.0/0"), new IPAddressString("::/0")))
                .build();
        neo4j.databaseManagementService().database("system").executeTransactionally(
                "ALTER USER neo4j SET PASSWORD $password CHANGE NOT REQUIRED", Map.of("password", password));
        return neo4j;
    }

    private static String readPassword(String file) throws IOException {
        if (file == null) {
            System.out.println("HARNESS_G_NEO4J_FAILED --password-file is required (authentication is always on)");
            System.out.flush();
            System.exit(2);
        }
        Path path = Path.of(file);
        String password = Files.readAllLines(path, StandardCharsets.UTF_8).stream().findFirst().orElse("");
        Files.delete(path);
        if (password.isEmpty()) {
            System.out.println("HARNESS_G_NEO4J_FAILED the password file " + file + " is empty");
            System.out.flush();
            System.exit(2);
        }
        return password;
    }

    private static int port(String text) throws IOException {
        int port = Integer.parseInt(text);
        if (port != 0) {
            return port;
        }
        try (java.net.ServerSocket socket = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    private static void waitForEof(InputStream in) {
        byte[] buffer = new byte[256];
        try {
            while (in.read(buffer) >= 0) {
                // ignore anything written; only the end of the stream matters
            }
        } catch (IOException ignored) {
            // a broken pipe is an end of stream too
        }
    }

    private static Map<String, String> parse(String[] args) {
        Map<String, String> opts = new java.util.HashMap<>();
        for (int i = 0; i < args.length; i++) {
            String key = args[i];
            if (key.equals("--stop-on-stdin-eof")) {
                opts.put(key, "true");
            } else if (key.startsWith("--") && i + 1 < args.length) {
                opts.put(key, args[++i]);
            } else {
                System.err.println("harness-g local Neo4j: unknown argument " + key);
                System.exit(2);
            }
        }
        return opts;
    }
}
