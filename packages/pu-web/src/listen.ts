// Listening on loopback only, on one port for every address (127.0.0.1 and ::1), so the URL
// `pu web` prints works whichever of the two the browser resolves `localhost` to.
import type { Server } from "node:http";

export interface Listening {
  servers: Server[];
  port: number;
  listening: string[];
}

function listenOne(server: Server, address: string, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const onError = (error: Error) => reject(error);
    server.once("error", onError);
    server.listen({ host: address, port, exclusive: true }, () => {
      server.off("error", onError);
      const bound = server.address();
      resolve(typeof bound === "object" && bound !== null ? bound.port : port);
    });
  });
}

/**
 * One server per address, the first picking the port (0: any free one). A machine without
 * IPv6 loses only ::1; the first address must work or the start fails.
 */
export async function listenAll(makeServer: () => Server, addresses: readonly string[], port: number): Promise<Listening> {
  const servers: Server[] = [];
  const listening: string[] = [];
  let chosen = port;
  for (const [index, address] of addresses.entries()) {
    const server = makeServer();
    try {
      chosen = await listenOne(server, address, chosen);
      servers.push(server);
      listening.push(address);
    } catch (error) {
      server.close();
      const code = (error as NodeJS.ErrnoException).code;
      if (index === 0 || (code !== "EADDRNOTAVAIL" && code !== "EAFNOSUPPORT")) {
        for (const s of servers) s.close();
        throw error;
      }
    }
  }
  return { servers, port: chosen, listening };
}
