// Reads width, height and format from an image's header (JPEG SOF, PNG IHDR,
// WebP VP8/VP8L/VP8X) without decoding it. The build uses it for the gallery
// manifest, so the page can put width/height on every <img> before any
// pixel is decoded.

export function probeHeader(bytes) {
  const b = bytes;
  if (b.length >= 24 && b[0] === 0x89 && b[1] === 0x50 && b[2] === 0x4e && b[3] === 0x47) {
    const v = new DataView(b.buffer, b.byteOffset, b.byteLength);
    return { format: 'png', width: v.getUint32(16), height: v.getUint32(20) };
  }
  if (b.length >= 30 && ascii(b, 0, 4) === 'RIFF' && ascii(b, 8, 4) === 'WEBP') return probeWebp(b);
  if (b.length >= 4 && b[0] === 0xff && b[1] === 0xd8) return probeJpeg(b);
  throw new Error('not a JPEG, PNG or WebP file');
}

function ascii(b, at, n) {
  return String.fromCharCode(...b.subarray(at, at + n));
}

function probeJpeg(b) {
  let i = 2;
  while (i + 9 < b.length) {
    if (b[i] !== 0xff) throw new Error(`JPEG: expected a marker at byte ${i}`);
    const marker = b[i + 1];
    if (marker === 0xff) {
      i += 1; // fill byte
      continue;
    }
    const len = (b[i + 2] << 8) | b[i + 3];
    // SOF0..SOF15 carry the frame size, except DHT (C4), JPG (C8) and DAC (CC).
    if (marker >= 0xc0 && marker <= 0xcf && ![0xc4, 0xc8, 0xcc].includes(marker)) {
      return { format: 'jpeg', height: (b[i + 5] << 8) | b[i + 6], width: (b[i + 7] << 8) | b[i + 8] };
    }
    i += 2 + len;
  }
  throw new Error('JPEG: no frame header found');
}

function probeWebp(b) {
  const chunk = ascii(b, 12, 4);
  if (chunk === 'VP8X') {
    const w = 1 + (b[24] | (b[25] << 8) | (b[26] << 16));
    const h = 1 + (b[27] | (b[28] << 8) | (b[29] << 16));
    return { format: 'webp', width: w, height: h };
  }
  if (chunk === 'VP8L') {
    const bits = b[21] | (b[22] << 8) | (b[23] << 16) | (b[24] << 24);
    return { format: 'webp', width: 1 + (bits & 0x3fff), height: 1 + ((bits >>> 14) & 0x3fff) };
  }
  if (chunk === 'VP8 ') {
    return { format: 'webp', width: (b[26] | (b[27] << 8)) & 0x3fff, height: (b[28] | (b[29] << 8)) & 0x3fff };
  }
  throw new Error(`WebP: unknown chunk ${JSON.stringify(chunk)}`);
}
