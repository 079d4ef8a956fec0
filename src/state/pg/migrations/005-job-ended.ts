/**
 * Migration 5: a job's end is told to every instance on the channel `console_job_ended`
 * ({@link JOB_ENDED_CHANNEL} in job-repos.ts), when its state leaves `running` whoever wrote it
 * (its exit, or a judge that marked it lost): the payload names the instance, the project and
 * the job as JSON. Delivered at commit; an instance that was not listening then revalidates the
 * store folder instead.
 */
export default `
  CREATE FUNCTION console_job_ended() RETURNS trigger LANGUAGE plpgsql AS $fn$
  BEGIN
    PERFORM pg_notify('console_job_ended', json_build_object('instanceId', NEW.instance_id, 'projectId', NEW.project_id, 'proposalId', NEW.proposal_id)::text);
    RETURN NULL;
  END
  $fn$;
  CREATE TRIGGER jobs_ended AFTER UPDATE OF state ON jobs FOR EACH ROW
    WHEN (OLD.state = 'running' AND NEW.state <> 'running') EXECUTE FUNCTION console_job_ended();
  `;
