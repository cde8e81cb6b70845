// Time to first byte of one GET on loopback: from sending the request to the
// response's status line and headers, measured with node:http (one fresh
// connection per request, as a first visit makes).
import http from 'node:http';

export function ttfb(origin, path, headers = {}) {
  return new Promise((resolve, reject) => {
    const t0 = process.hrtime.bigint();
    const req = http.get(`${origin}${path}`, { headers, agent: false }, (res) => {
      const ms = Number(process.hrtime.bigint() - t0) / 1e6;
      const xcache = res.headers['x-cache'] ?? null;
      res.resume();
      res.on('end', () => resolve({ ms, status: res.statusCode, xcache }));
    });
    req.on('error', reject);
  });
}

export function percentile(xs, p) {
  const s = [...xs].sort((a, b) => a - b);
  if (s.length === 0) return null;
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

export function summary(xs) {
  return {
    n: xs.length,
    p50_ms: round(percentile(xs, 50)),
    p90_ms: round(percentile(xs, 90)),
    p99_ms: round(percentile(xs, 99)),
  };
}

const round = (v) => (v === null ? null : Math.round(v * 1000) / 1000);
