/**
 * `GET /api/media/{project_id}/{file}` (api-decisions.md, "Service routes with partial shape":
 * Media; engine-format.md: `projects/<project_id>/media/<file>`). Served by Express's
 * `res.sendFile` (the `send` library) from a fixed root with dotfiles denied: byte ranges
 * (206, 416), content types by extension, conditional requests (ETag, Last-Modified → 304).
 * Both segments pass the identifier guard first (400).
 */
import fsp from 'node:fs/promises';
import path from 'node:path';
import type { Response } from 'express';
import { z } from 'zod';
import { checkId } from '../../engine/ids.js';
import { projectDir } from '../../engine/project-file.js';
import { HttpError } from '../errors.js';
import type { Api } from '../route.js';
import { ErrorBody, PathId } from '../schemas.js';
import type { AppDeps } from './deps.js';

/**
 * SVG can carry script: served as an image in a sandbox with nothing else allowed, so opening
 * it directly runs nothing in this origin.
 */
export const SVG_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox";

/** Headers `send` sets for a file, removed again when an error answer (JSON) replaces it. */
const FILE_HEADERS = ['Content-Type', 'Content-Length', 'Content-Range', 'ETag', 'Last-Modified', 'Accept-Ranges', 'Cache-Control', 'Content-Security-Policy'];

export function mediaRoutes(api: Api, { store }: AppDeps): void {
  api.route({
    method: 'get',
    path: '/api/media/:projectId/:file',
    operationId: 'getMedia',
    summary: 'A media file of a project',
    description:
      'The file `projects/<project_id>/media/<file>` of the engine store. `Range: bytes=…` (one range) answers 206 with `Content-Range`; an unsatisfiable range 416 with `Content-Range: bytes */<size>`. `If-None-Match` / `If-Modified-Since` answer 304. Served with `X-Content-Type-Options: nosniff`; SVG also with a sandboxing `Content-Security-Policy`.',
    tag: 'Engine',
    params: z.object({ projectId: PathId('Project id'), file: PathId('File name inside the project’s `media/` folder') }),
    answers: {
      200: {
        description: 'The file; `Content-Type` from its extension (image/png, image/svg+xml, video/webm, video/mp4, image/gif, image/jpeg…).',
        contentType: '*/*',
        schema: z.string().meta({ format: 'binary' }),
        headers: { ETag: 'Weak validator from size and modification time.', 'Last-Modified': 'Modification time.', 'Accept-Ranges': '`bytes`' },
      },
      206: {
        description: 'The requested byte range.',
        contentType: '*/*',
        schema: z.string().meta({ format: 'binary' }),
        headers: { 'Content-Range': '`bytes <first>-<last>/<size>`' },
      },
      304: { description: 'Not modified.' },
      400: { description: 'Malformed project id or file name.', schema: ErrorBody },
      404: { description: 'No such file.', schema: ErrorBody },
      412: { description: 'An If-Match / If-Unmodified-Since precondition failed.', schema: ErrorBody },
      416: { description: 'Range not satisfiable.', schema: ErrorBody, headers: { 'Content-Range': '`bytes */<size>`' } },
    },
    handler: async ({ res, params }) => {
      const projectId = checkId('project_id', params.projectId);
      const file = checkId('file', params.file);
      const root = path.join(projectDir(store.root, projectId), 'media');
      const stat = await fsp.stat(path.join(root, file)).catch(() => null);
      if (!stat?.isFile()) throw new HttpError(404, `no media file ${file} in project ${projectId}`);

      res.setHeader('X-Content-Type-Options', 'nosniff');
      if (path.extname(file).toLowerCase() === '.svg') res.setHeader('Content-Security-Policy', SVG_CSP);
      // The app turns generated ETags off (app.set('etag', false)), which res.sendFile follows;
      // set the validator `send` would compute (the `etag` package's stat form), and `send`
      // uses it for If-None-Match and If-Range.
      res.setHeader('ETag', `W/"${stat.size.toString(16)}-${stat.mtime.getTime().toString(16)}"`);
      await sendFile(res, file, root, stat.size);
    },
  });
}

/** res.sendFile as a promise; its errors become HttpErrors (JSON answers). */
function sendFile(res: Response, file: string, root: string, size: number): Promise<void> {
  return new Promise((resolve, reject) => {
    res.sendFile(file, { root, dotfiles: 'deny', lastModified: true, acceptRanges: true, maxAge: 0 }, (err?: Error) => {
      // No error, or the client went away mid-body: nothing more to answer.
      if (!err || res.headersSent) return resolve();
      for (const h of FILE_HEADERS) res.removeHeader(h);
      const status = (err as { status?: number; statusCode?: number }).status ?? (err as { statusCode?: number }).statusCode;
      if (status === 416) reject(new HttpError(416, `range not satisfiable (the file has ${size} bytes)`, { 'Content-Range': `bytes */${size}` }));
      else if (status === 412) reject(new HttpError(412, 'precondition failed'));
      else if (status === 404 || (err as NodeJS.ErrnoException).code === 'ENOENT') reject(new HttpError(404, `no media file ${file}`));
      else if (status === 403) reject(new HttpError(403, 'forbidden'));
      else reject(err);
    });
  });
}
