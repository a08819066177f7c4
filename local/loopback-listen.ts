/** Starting an emulator's HTTP server on loopback, one way for all of them. */
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RunningServer } from './fauxqs-server.ts';

/**
 * Listens on `host` (127.0.0.1 by default) at `port` (0: any free one). Its `stop` also drops the
 * connections SDK clients keep alive, so closing does not wait for their idle timeout.
 */
export async function listenOnLoopback(server: Server, port = 0, host = '127.0.0.1'): Promise<RunningServer> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port: actual } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${actual}`,
    server,
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err?: Error) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
