// Counters of this isolate, served at /__stats for the load and soak tests.
export const stats = {
  started: null, // set by the first request (the clock reads 0 at load time in workerd)
  requests: 0,
  hits: 0,
  misses: 0,
  not_modified: 0,
  transforms: 0,
  status: {},
};

export function countStatus(status) {
  stats.status[status] = (stats.status[status] ?? 0) + 1;
}
