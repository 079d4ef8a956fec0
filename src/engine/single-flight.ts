/** Single-flight loading: concurrent requests for one key share one load until it settles. */
export class SingleFlight<T> {
  private readonly inFlight = new Map<string, Promise<T>>();
  private started = 0;

  /** The running load of `key`, or a new one from `load`; rejects as `load` does. */
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
