// Starts DynamoDB Local bound to one host (loopback by default) instead of every interface.
// DynamoDB Local has no option for the bind address; its Jetty server is built with a port only,
// so this launcher builds the server through DynamoDB Local's own ServerRunner and sets the host on
// the connector before starting it. Compiled once into the cache folder (launcher.py), or run in
// Java's single-file source mode where javac is missing. Arguments are DynamoDB Local's own
// (-inMemory, -sharedDb, -port, ...).
import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

public class LoopbackDynamoDBLocal {
    public static void main(String[] args) throws Exception {
        String host = System.getProperty("xorack.bindHost", "127.0.0.1");
        DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
        Field f = DynamoDBProxyServer.class.getDeclaredField("server");
        f.setAccessible(true);
        Server server = (Server) f.get(proxy);
        for (Connector c : server.getConnectors()) {
            ((ServerConnector) c).setHost(host);
        }
        proxy.start();
        System.out.println("xor-ack: DynamoDB Local listening on " + host);
        proxy.join();
    }
}
