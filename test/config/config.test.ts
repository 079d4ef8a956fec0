import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { ConfigError, readConfig, REPO_ROOT } from '../../src/config/config.js';

describe('readConfig', () => {
  it('applies the documented defaults', () => {
    const c = readConfig({});
    expect(c.port).toBe(8431);
    expect(c.host).toBe('127.0.0.1');
    expect(c.stateDir).toBe(path.join(REPO_ROOT, 'var'));
    expect(c.dataDir).toBe(path.join(REPO_ROOT, 'var', 'sample-store'));
    expect(c.sampleSeedDir).toBe(path.join(REPO_ROOT, 'sample-store'));
    expect(c.dispatchCli).toBe(path.join(REPO_ROOT, 'dist', 'dispatch', 'cli.js'));
    expect(c.ttydHost).toBeNull();
    expect(c.writeUpstream).toBeNull();
    expect(c.jobs.maxRunning).toBe(64);
    expect(c.events.retention).toBe(200_000);
    expect(c.events.flushIntervalMs).toBe(5);
    expect(c.sse.heartbeatMs).toBeLessThanOrEqual(15_000);
    expect(c.childEnv.CONSOLE_DATA_DIR).toBe(c.dataDir);
  });

  it('reads CONSOLE_JOB_THREAD_NICE: 5 by default, 0..19, anything else refused naming it', () => {
    expect(readConfig({}).jobs.threadNice).toBe(5);
    expect(readConfig({ CONSOLE_JOB_THREAD_NICE: '0' }).jobs.threadNice).toBe(0);
    expect(readConfig({ CONSOLE_JOB_THREAD_NICE: '19' }).jobs.threadNice).toBe(19);
    for (const bad of ['-1', '20', '1.5', 'low']) expect(() => readConfig({ CONSOLE_JOB_THREAD_NICE: bad })).toThrow(/CONSOLE_JOB_THREAD_NICE/);
  });

  it('reads CONSOLE_JOB_THREAD_YOUNG_GENERATION_MB: 8 by default, 0..1024, anything else refused naming it', () => {
    expect(readConfig({}).jobs.threadYoungGenerationMb).toBe(8);
    expect(readConfig({ CONSOLE_JOB_THREAD_YOUNG_GENERATION_MB: '0' }).jobs.threadYoungGenerationMb).toBe(0);
    expect(readConfig({ CONSOLE_JOB_THREAD_YOUNG_GENERATION_MB: '1024' }).jobs.threadYoungGenerationMb).toBe(1024);
    for (const bad of ['-1', '1025', '2.5', 'big']) expect(() => readConfig({ CONSOLE_JOB_THREAD_YOUNG_GENERATION_MB: bad })).toThrow(/CONSOLE_JOB_THREAD_YOUNG_GENERATION_MB/);
  });

  it('reads CONSOLE_THREAD_ANSWER_LIMIT_MS: 60 s by default, 1000..3600000, anything else refused naming it', () => {
    expect(readConfig({}).threads.answerLimitMs).toBe(60_000);
    expect(readConfig({ CONSOLE_THREAD_ANSWER_LIMIT_MS: '1000' }).threads.answerLimitMs).toBe(1000);
    expect(readConfig({ CONSOLE_THREAD_ANSWER_LIMIT_MS: '3600000' }).threads.answerLimitMs).toBe(3_600_000);
    for (const bad of ['999', '0', '3600001', '1.5', 'never']) expect(() => readConfig({ CONSOLE_THREAD_ANSWER_LIMIT_MS: bad })).toThrow(/CONSOLE_THREAD_ANSWER_LIMIT_MS/);
  });

  it('reads CONSOLE_HTTP_KEEP_ALIVE_TIMEOUT_MS: 5 s (Node’s) by default, 1000..3600000, anything else refused naming it', () => {
    expect(readConfig({}).http.keepAliveTimeoutMs).toBe(5000);
    expect(readConfig({ CONSOLE_HTTP_KEEP_ALIVE_TIMEOUT_MS: '1000' }).http.keepAliveTimeoutMs).toBe(1000);
    expect(readConfig({ CONSOLE_HTTP_KEEP_ALIVE_TIMEOUT_MS: '3600000' }).http.keepAliveTimeoutMs).toBe(3_600_000);
    for (const bad of ['999', '0', '3600001', '1.5', '5s']) expect(() => readConfig({ CONSOLE_HTTP_KEEP_ALIVE_TIMEOUT_MS: bad })).toThrow(/CONSOLE_HTTP_KEEP_ALIVE_TIMEOUT_MS/);
  });

  it('reads CONSOLE_EVENT_WRITER_THREAD_NICE: 5 by default, 0..19, anything else refused naming it', () => {
    expect(readConfig({}).events.writerThreadNice).toBe(5);
    expect(readConfig({ CONSOLE_EVENT_WRITER_THREAD_NICE: '0' }).events.writerThreadNice).toBe(0);
    expect(readConfig({ CONSOLE_EVENT_WRITER_THREAD_NICE: '19' }).events.writerThreadNice).toBe(19);
    for (const bad of ['-1', '20', '1.5', 'low']) expect(() => readConfig({ CONSOLE_EVENT_WRITER_THREAD_NICE: bad })).toThrow(/CONSOLE_EVENT_WRITER_THREAD_NICE/);
  });

  it('reads CONSOLE_EVENT_APPEND_THREAD_NICE: 0 by default, 0..19, anything else refused naming it', () => {
    expect(readConfig({}).events.appendThreadNice).toBe(0);
    expect(readConfig({ CONSOLE_EVENT_APPEND_THREAD_NICE: '7' }).events.appendThreadNice).toBe(7);
    expect(readConfig({ CONSOLE_EVENT_APPEND_THREAD_NICE: '19' }).events.appendThreadNice).toBe(19);
    for (const bad of ['-1', '20', '1.5', 'low']) expect(() => readConfig({ CONSOLE_EVENT_APPEND_THREAD_NICE: bad })).toThrow(/CONSOLE_EVENT_APPEND_THREAD_NICE/);
  });

  it('reads CONSOLE_SSE_REPLAY_THREAD_NICE: 5 by default, 0..19, anything else refused naming it', () => {
    expect(readConfig({}).sse.replayThreadNice).toBe(5);
    expect(readConfig({ CONSOLE_SSE_REPLAY_THREAD_NICE: '0' }).sse.replayThreadNice).toBe(0);
    expect(readConfig({ CONSOLE_SSE_REPLAY_THREAD_NICE: '19' }).sse.replayThreadNice).toBe(19);
    for (const bad of ['-1', '20', '1.5', 'low']) expect(() => readConfig({ CONSOLE_SSE_REPLAY_THREAD_NICE: bad })).toThrow(/CONSOLE_SSE_REPLAY_THREAD_NICE/);
  });

  it('serves a given CONSOLE_DATA_DIR as is, with no sample seeding', () => {
    const c = readConfig({ CONSOLE_DATA_DIR: 'store', CONSOLE_STATE_DIR: 'state' }, '/srv');
    expect(c.dataDir).toBe('/srv/store');
    expect(c.stateDir).toBe('/srv/state');
    expect(c.sampleSeedDir).toBeNull();
    expect(c.stateDbPath).toBe('/srv/state/console-state.db');
  });

  it('trims TTYD_HOST and treats blank as unset', () => {
    expect(readConfig({ TTYD_HOST: '  mesh-host  ' }).ttydHost).toBe('mesh-host');
    expect(readConfig({ TTYD_HOST: '   ' }).ttydHost).toBeNull();
    expect(readConfig({ TTYD_HOST: '' }).ttydHost).toBeNull();
  });

  it('treats a blank SERVICE_WRITE_UPSTREAM as unset, like TTYD_HOST', () => {
    expect(readConfig({ SERVICE_WRITE_UPSTREAM: '' }).writeUpstream).toBeNull();
    expect(readConfig({ SERVICE_WRITE_UPSTREAM: '  ' }).writeUpstream).toBeNull();
    expect(readConfig({ SERVICE_WRITE_UPSTREAM: ' http://up:8431/ ' }).writeUpstream).toBe('http://up:8431');
  });

  it('reads CONSOLE_RECORD_ANSWERS_DIR against the working folder, blank as unset, and keeps it from children', () => {
    expect(readConfig({}).recordAnswersDir).toBeNull();
    expect(readConfig({ CONSOLE_RECORD_ANSWERS_DIR: '  ' }).recordAnswersDir).toBeNull();
    const c = readConfig({ CONSOLE_RECORD_ANSWERS_DIR: ' answers ' }, '/srv');
    expect(c.recordAnswersDir).toBe('/srv/answers');
    expect(c.childEnv).not.toHaveProperty('CONSOLE_RECORD_ANSWERS_DIR');
  });

  it('builds the CORS allow-list from loopback names, dev hosts and ports', () => {
    const c = readConfig({ CONSOLE_CORS_DEV_HOSTS: 'dev-a.mesh, dev-b.mesh' });
    expect(c.cors.origins).toHaveLength(12);
    for (const h of ['localhost', '127.0.0.1', 'dev-a.mesh', 'dev-b.mesh']) {
      for (const p of [5173, 5174, 5175]) expect(c.cors.origins).toContain(`http://${h}:${p}`);
    }
    expect(readConfig({ CONSOLE_CORS_PORTS: '3000' }).cors.origins).toEqual(['http://localhost:3000', 'http://127.0.0.1:3000']);
  });

  it.each([
    ['PORT', 'abc'],
    ['PORT', '70000'],
    ['CONSOLE_MAX_RUNNING_JOBS', '0'],
    ['CONSOLE_EVENT_RETENTION', '1.5'],
    ['SERVICE_WRITE_UPSTREAM', 'not a url'],
    ['SERVICE_WRITE_UPSTREAM', 'ftp://x'],
    ['SERVICE_WRITE_UPSTREAM', 'http://user:secret@upstream:8431'],
    ['SERVICE_WRITE_UPSTREAM', 'https://token@upstream'],
    ['CONSOLE_ALLOWED_HOSTS', 'user@console.example'],
    ['CONSOLE_ALLOWED_HOSTS', 'console.example/path'],
    ['CONSOLE_ALLOWED_HOSTS', 'console.example:99999'],
    ['CONSOLE_ALLOWED_HOSTS', '*.example'],
    ['CONSOLE_ALLOWED_HOSTS', '[::1'],
    ['CONSOLE_ALLOWED_HOSTS', 'c%6Fnsole.example'],
    ['LOG_LEVEL', 'loud'],
    ['CONSOLE_CORS_DEV_HOSTS', 'evil host'],
    ['CONSOLE_SSE_HEARTBEAT_MS', '60000'],
    ['CONSOLE_EVENT_FLUSH_INTERVAL_MS', '-1'],
    ['CONSOLE_EVENT_FLUSH_INTERVAL_MS', '1001'],
    ['CONSOLE_INSTANCE_ID', 'two words'],
    ['CONSOLE_INSTANCE_ID', '../etc'],
    ['CONSOLE_INSTANCE_ID', 'x'.repeat(129)],
    ['CONSOLE_INSTANCE_TIMEOUT_MS', '500'],
    ['CONSOLE_STORE_REVALIDATE_MS', '0'],
    ['CONSOLE_STORE_WATCH', 'no'],
    ['CONSOLE_STORE_WATCH', 'OFF'],
    ['CONSOLE_HELD_EVENTS_MAX', '10'],
  ])('rejects %s=%j with a message naming the variable', (name, value) => {
    expect(() => readConfig({ [name]: value })).toThrow(ConfigError);
    expect(() => readConfig({ [name]: value })).toThrow(new RegExp(`\\b${name}\\b`));
  });

  it('reads cluster mode’s variables: a blank CONSOLE_DATABASE_URL is unset; the URL is a secret, never shown nor handed to children', () => {
    expect(readConfig({}).cluster).toEqual({
      databaseUrl: null,
      connectTimeoutMs: 10_000,
      instanceId: null,
      instanceTimeoutMs: 10_000,
      heldEventsMax: 100_000,
      storeRevalidateMs: 2000,
      instanceUrl: null,
    });
    expect(readConfig({ CONSOLE_DATABASE_URL: '  ', CONSOLE_INSTANCE_ID: ' ' }).cluster).toMatchObject({ databaseUrl: null, instanceId: null });
    const url = 'postgres://console:s3cret@db:5432/console';
    const c = readConfig({ CONSOLE_DATABASE_URL: ` ${url} `, CONSOLE_INSTANCE_ID: 'host-1:8431', PATH: '/bin' });
    expect(c.cluster).toMatchObject({ databaseUrl: url, instanceId: 'host-1:8431' });
    expect(c.nonDefault.CONSOLE_DATABASE_URL).toBe('(set)');
    expect(c.childEnv).not.toHaveProperty('CONSOLE_DATABASE_URL');
  });

  it('watches the store folder unless CONSOLE_STORE_WATCH=off (a network share)', () => {
    expect(readConfig({}).store.watch).toBe(true);
    expect(readConfig({ CONSOLE_STORE_WATCH: 'on' }).store.watch).toBe(true);
    expect(readConfig({ CONSOLE_STORE_WATCH: 'off' }).store.watch).toBe(false);
  });

  it('reads the history’s sampling interval and the URL other instances reach this one at', () => {
    expect(readConfig({}).history).toEqual({ sampleMs: 5000 });
    expect(readConfig({ CONSOLE_HISTORY_SAMPLE_MS: '250' }).history).toEqual({ sampleMs: 250 });
    for (const bad of ['50', '60001', '5s']) expect(() => readConfig({ CONSOLE_HISTORY_SAMPLE_MS: bad })).toThrow(/CONSOLE_HISTORY_SAMPLE_MS/);
    expect(readConfig({ CONSOLE_INSTANCE_URL: ' http://10.0.0.7:8431/ ' }).cluster.instanceUrl).toBe('http://10.0.0.7:8431');
    expect(readConfig({ CONSOLE_INSTANCE_URL: '' }).cluster.instanceUrl).toBeNull();
    for (const bad of ['ftp://x', 'http://u:p@x:1', 'not a url']) expect(() => readConfig({ CONSOLE_INSTANCE_URL: bad })).toThrow(/CONSOLE_INSTANCE_URL/);
  });

  it('hands children the service’s environment without its secrets', () => {
    const c = readConfig({ CONSOLE_API_TOKEN: 'tok', SERVICE_WRITE_UPSTREAM: 'http://up:8431', HOME: '/home/x', PATH: '/bin' });
    expect(c.apiToken).toBe('tok');
    expect(c.writeUpstream).toBe('http://up:8431');
    expect(c.childEnv).not.toHaveProperty('CONSOLE_API_TOKEN');
    expect(c.childEnv).not.toHaveProperty('SERVICE_WRITE_UPSTREAM');
    expect(c.childEnv).toMatchObject({ HOME: '/home/x', PATH: '/bin', CONSOLE_DATA_DIR: c.dataDir });
  });

  it('reads CONSOLE_ALLOWED_HOSTS into canonical hosts, with or without a port', () => {
    expect(readConfig({}).allowedHosts).toEqual([]);
    expect(readConfig({ CONSOLE_ALLOWED_HOSTS: ' ' }).allowedHosts).toEqual([]);
    expect(readConfig({ CONSOLE_ALLOWED_HOSTS: 'Console.Example, console.example.:8431,10.0.0.5,[0:0:0:0:0:0:0:5]:80, 0x7f.1, mesh-a, Compose_Service:8431' }).allowedHosts).toEqual([
      'console.example',
      'console.example:8431',
      '10.0.0.5',
      '[::5]:80',
      '127.0.0.1',
      'mesh-a',
      'compose_service:8431',
    ]);
  });

  it('names every bad variable at once', () => {
    expect(() => readConfig({ PORT: 'x', LOG_LEVEL: 'y' })).toThrow(/PORT[\s\S]*LOG_LEVEL|LOG_LEVEL[\s\S]*PORT/);
  });

  it('returns a frozen object', () => {
    const c = readConfig({});
    expect(Object.isFrozen(c)).toBe(true);
    expect(Object.isFrozen(c.jobs)).toBe(true);
    expect(Object.isFrozen(c.cors.origins)).toBe(true);
  });
});
