// An agent as a status report carries it, for tests of what the CLI draws from reports.
export const agentRow = (id: string, fields: Record<string, unknown> = {}) => ({
  id,
  name: id,
  agentType: "terminal",
  status: "streaming",
  storedStatus: "streaming",
  startedAt: "2026-03-08T12:00:00.000Z",
  idleSeconds: 3,
  live: true,
  ...fields,
});
