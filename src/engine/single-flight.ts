/**
 * Single-flight loading (issue 11, item 2): concurrent requests for the same thing share one
 * load. The first caller for a key starts it; callers that come while it runs get the same
 * promise; once it settles (either way) the next caller starts a new one.
 */
export class SingleFlight<T> {
  private readonly inFlight = new Map<string, Promise<T>>();
  private started = 0;

  /**
   * The running load of `key`, or a new one started with `load`.
   * @returns the load's promise, shared by every caller while it runs (it rejects as `load` does).
   */
  run(key: string, load: () => Promise<T>): Promise<T> {
    let flight = this.inFlight.get(key);
    if (flight) return flight;
    this.started++;
    flight = load();
    this.inFlight.set(key, flight);
    const done = () => {
      if (this.inFlight.get(key) === flight) this.inFlight.delete(key);
    };
    flight.then(done, done);
    return flight;
  }

  /** Loads started since start-up (callers that joined a running one are not counted). */
  get startedCount(): number {
    return this.started;
  }
}
