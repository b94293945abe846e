package npuwatch.testnode;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.opensearch.analysis.common.CommonAnalysisPlugin;
import org.opensearch.common.settings.Settings;
import org.opensearch.core.common.transport.TransportAddress;
import org.opensearch.env.Environment;
import org.opensearch.http.HttpServerTransport;
import org.opensearch.ingest.common.IngestCommonPlugin;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.painless.PainlessPlugin;
import org.opensearch.script.mustache.MustachePlugin;
import org.opensearch.plugins.Plugin;
import org.opensearch.transport.Netty4Plugin;

/**
 * An OpenSearch server for tests: plain HTTP on 127.0.0.1, no security plugin, no bootstrap
 * checks, no security manager. A single node by default; a member of a cluster of several when
 * given the cluster's options.
 *
 * <p>Usage: {@code TestNode PORT HOME_DIR [CLUSTER_NAME] [--node-name NAME --transport-port PORT
 * --seed-hosts HOST:PORT,... --initial-cluster-manager-nodes NAME,...]}. PORT 0 picks a free
 * port. Prints {@code READY http://127.0.0.1:PORT} on stdout once HTTP is bound (a cluster's
 * member: once it has joined the cluster, or after 30 s); SIGTERM closes the node.
 */
public final class TestNode {

    /** Plugins loaded from the classpath (no plugins/ or modules/ directory is needed). */
    static final List<Class<? extends Plugin>> PLUGINS =
            List.of(
                    Netty4Plugin.class,
                    CommonAnalysisPlugin.class,
                    PainlessPlugin.class,
                    IngestCommonPlugin.class,
                    MustachePlugin.class);

    /** Node subclass only to reach the protected constructor that takes classpath plugins. */
    static final class EmbeddedNode extends Node {
        EmbeddedNode(Environment environment, Collection<Class<? extends Plugin>> plugins) {
            super(environment, plugins, true);
        }
    }

    private TestNode() {}

    /** How a member of a cluster of several nodes finds the others (all on 127.0.0.1). */
    record Membership(
            String nodeName, int transportPort, List<String> seedHosts, List<String> managers) {

        static final List<String> OPTIONS =
                List.of(
                        "--node-name",
                        "--transport-port",
                        "--seed-hosts",
                        "--initial-cluster-manager-nodes");

        /** The membership the options after the positional arguments give; null when none. */
        static Membership parse(List<String> options) {
            if (options.isEmpty()) {
                return null;
            }
            Map<String, String> given = new HashMap<>();
            for (int i = 0; i < options.size(); i += 2) {
                String name = options.get(i);
                if (!OPTIONS.contains(name) || i + 1 >= options.size()) {
                    throw new IllegalArgumentException(
                            "expected one of " + OPTIONS + " and its value, got " + name);
                }
                given.put(name, options.get(i + 1));
            }
            if (!given.keySet().containsAll(OPTIONS)) {
                throw new IllegalArgumentException("a cluster's member needs all of " + OPTIONS);
            }
            return new Membership(
                    given.get("--node-name"),
                    Integer.parseInt(given.get("--transport-port")),
                    Arrays.asList(given.get("--seed-hosts").split(",")),
                    Arrays.asList(given.get("--initial-cluster-manager-nodes").split(",")));
        }
    }

    static Settings settings(int port, Path home, String clusterName) {
        return Settings.builder()
                .put("cluster.name", clusterName)
                .put("node.name", "npuwatch-test-node")
                .put("path.home", home.toString())
                .put("path.data", home.resolve("data").toString())
                .put("path.logs", home.resolve("logs").toString())
                .put("discovery.type", "single-node")
                .put("network.host", "127.0.0.1")
                .put("http.port", Integer.toString(port))
                .put("transport.port", "0")
                .put("transport.type", "netty4")
                .put("http.type", "netty4")
                // test data is small; never let a nearly full disk block writes
                .put("cluster.routing.allocation.disk.threshold_enabled", false)
                .put("bootstrap.memory_lock", false)
                .build();
    }

    /**
     * The single node's settings, except for discovery: the member finds the others at the seed
     * hosts and, the first time the cluster forms, elects a cluster manager among the named
     * nodes. Its transport port is fixed, so that it rejoins at the same address when started
     * again on its data.
     */
    static Settings memberSettings(int port, Path home, String clusterName, Membership member) {
        return Settings.builder()
                .put(settings(port, home, clusterName).filter(key -> !"discovery.type".equals(key)))
                .put("node.name", member.nodeName())
                .put("transport.port", Integer.toString(member.transportPort()))
                .putList("discovery.seed_hosts", member.seedHosts())
                .putList("cluster.initial_cluster_manager_nodes", member.managers())
                .build();
    }

    static final String USAGE =
            "usage: TestNode PORT HOME_DIR [CLUSTER_NAME] [--node-name NAME --transport-port PORT"
                    + " --seed-hosts HOST:PORT,... --initial-cluster-manager-nodes NAME,...]";

    public static void main(String[] args) throws Exception {
        if (args.length < 2) {
            System.err.println(USAGE);
            System.exit(2);
        }
        int port = Integer.parseInt(args[0]);
        Path home = Paths.get(args[1]).toAbsolutePath();
        String clusterName = args.length > 2 ? args[2] : "npuwatch-test";
        List<String> options = Arrays.asList(args).subList(Math.min(3, args.length), args.length);
        Membership member = null;
        try {
            member = Membership.parse(options);
        } catch (IllegalArgumentException e) {
            System.err.println(e.getMessage() + "\n" + USAGE);
            System.exit(2);
        }
        Settings nodeSettings =
                member == null
                        ? settings(port, home, clusterName)
                        : memberSettings(port, home, clusterName, member);
        String nodeName = member == null ? "npuwatch-test-node" : member.nodeName();
        Files.createDirectories(home.resolve("config"));
        Files.createDirectories(home.resolve("data"));
        Files.createDirectories(home.resolve("logs"));

        Environment env =
                InternalSettingsPreparer.prepareEnvironment(
                        nodeSettings, Map.of(), null, () -> nodeName);
        Node node = new EmbeddedNode(env, PLUGINS);

        CountDownLatch stopped = new CountDownLatch(1);
        Thread hook =
                new Thread(
                        () -> {
                            try {
                                node.close();
                                node.awaitClose(20, TimeUnit.SECONDS);
                            } catch (Exception e) {
                                e.printStackTrace();
                            } finally {
                                stopped.countDown();
                            }
                        },
                        "testnode-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);

        try {
            node.start();
        } catch (Throwable t) {
            t.printStackTrace();
            // one summary line last, so that a caller showing the output's tail sees the cause
            StringBuilder why = new StringBuilder("FAILED to start:");
            for (Throwable c = t; c != null; c = c.getCause() == c ? null : c.getCause()) {
                why.append(" [").append(c.getClass().getName()).append(": ")
                        .append(c.getMessage()).append(']');
            }
            System.err.println(why);
            System.err.flush();
            Runtime.getRuntime().halt(1);
        }
        TransportAddress bound =
                node.injector().getInstance(HttpServerTransport.class).boundAddress()
                        .publishAddress();
        System.out.println("READY http://127.0.0.1:" + bound.getPort());
        System.out.flush();

        // Keep the JVM alive until the shutdown hook has closed the node.
        stopped.await();
    }
}
