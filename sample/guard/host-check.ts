/**
 * True for a host name or address that only this machine reaches: `localhost` (and
 * `*.localhost`), `127.0.0.0/8`, `::1`. Brackets and a port are ignored, as a `Host` header
 * carries them.
 *
 * @example
 * ```ts
 * isLoopbackHost('127.0.0.1:3000'); // true
 * isLoopbackHost('[::1]:3000'); // true
 * isLoopbackHost('rebind.attacker.example'); // false
 * ```
 */
export function isLoopbackHost(host: string): boolean {
  let name = host.trim().toLowerCase();
  if (name.startsWith('[')) name = name.slice(1, name.indexOf(']') >>> 0);
  else if (name.split(':').length === 2) name = name.slice(0, name.indexOf(':'));
  if (name.endsWith('.')) name = name.slice(0, -1);
  if (name === 'localhost' || name.endsWith('.localhost')) return true;
  if (name === '::1' || name === '0:0:0:0:0:0:0:1') return true;
  if (name.startsWith('::ffff:')) name = name.slice('::ffff:'.length);
  const octets = name.split('.');
  return (
    octets.length === 4 &&
    octets[0] === '127' &&
    octets.every((o) => /^\d{1,3}$/.test(o) && Number(o) <= 255)
  );
}
