/**
 * A host of the test's own for traffic that must not come from loopback: a network namespace
 * joined to this one by a veth pair, each end with an address of a /30 of 10.0.0.0/8 picked at
 * random (`ip netns`, `ip link` from iproute2, as root). The tests never use this machine's own
 * interface addresses or any other host: what they send stays between the two ends.
 */
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';

export interface Netns {
  readonly name: string;
  /** This side's address (a service may listen on it). */
  readonly hostAddress: string;
  /** The namespace's address (what a service sees as the caller). */
  readonly nsAddress: string;
  /** Runs `argv` inside the namespace; resolves with its stdout (rejects with its stderr on failure). */
  run(argv: readonly string[]): Promise<string>;
  /** Removes the namespace and the veth pair. */
  close(): void;
}

const ip = (...args: string[]) => execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] });

/**
 * Makes the namespace and the pair.
 * @throws naming what is missing (iproute2, root) or what failed: a test that needs it fails, never skips.
 */
export function makeNetns(): Netns {
  const tag = randomBytes(4).toString('hex');
  const name = `cbt-${tag}`;
  const here = `vh${tag}`;
  const there = `vn${tag}`;
  const b = 1 + ((randomBytes(1)[0] as number) % 254);
  const c = (randomBytes(1)[0] as number) & 0xfc;
  const hostAddress = `10.${b}.${c}.1`;
  const nsAddress = `10.${b}.${c}.2`;
  try {
    ip('netns', 'add', name);
    ip('link', 'add', here, 'type', 'veth', 'peer', 'name', there);
    ip('link', 'set', there, 'netns', name);
    ip('addr', 'add', `${hostAddress}/30`, 'dev', here);
    ip('link', 'set', here, 'up');
    ip('netns', 'exec', name, 'ip', 'addr', 'add', `${nsAddress}/30`, 'dev', there);
    ip('netns', 'exec', name, 'ip', 'link', 'set', there, 'up');
    ip('netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up');
  } catch (err) {
    cleanup(name, here);
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(`cannot make a network namespace for the test (ip netns, as root; Debian's iproute2): ${stderr || (err as Error).message}`, { cause: err });
  }
  return {
    name,
    hostAddress,
    nsAddress,
    run: (argv) =>
      new Promise((resolve, reject) => {
        execFile('ip', ['netns', 'exec', name, ...argv], { encoding: 'utf8' }, (err, stdout, stderr) =>
          err ? reject(new Error(`${argv.join(' ')} in ${name}: ${stderr || err.message}`)) : resolve(stdout),
        );
      }),
    close: () => cleanup(name, here),
  };
}

function cleanup(name: string, here: string): void {
  for (const args of [
    ['netns', 'del', name],
    ['link', 'del', here],
  ]) {
    try {
      ip(...args);
    } catch {
      // not made, or gone with the namespace
    }
  }
}
