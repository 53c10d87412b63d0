import { connect } from 'node:net';

/** Whether something accepts TCP connections on `host:port` (e.g. a server a test stopped). */
export function acceptsConnections(address: string): Promise<boolean> {
  const [host = '', port = ''] = address.split(':');
  return new Promise((resolve) => {
    const socket = connect({ host, port: Number(port) });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
