// `GET /api/media/{project_id}/{file}` (api-decisions.md §Service routes with partial shape): `res.sendFile` with
// ranges, of a file opened first (read-store-file.ts) and sent through `/proc/self/fd/<fd>`, so it cannot be
// swapped in between. Only inert types are served as themselves, all with a sandbox CSP: a project cannot plant a script.
import path from 'node:path';
import type { Response } from 'express';
import { z } from 'zod';
import { checkId } from '../../engine/ids.js';
import { openStoreFile } from '../../engine/read-store-file.js';
import { HttpError, RangeNotSatisfiableError } from '../errors.js';
import type { Api } from '../route.js';
import { ErrorBody, PathId } from '../schemas.js';
import type { AppDeps } from './deps.js';

/** Every media answer's policy: a sandbox, nothing loaded, no script (SVG keeps its inline styles). */
export const MEDIA_CSP = "default-src 'none'; style-src 'unsafe-inline'; sandbox";

/** Types served as themselves, by lower-case extension: what a browser shows and never runs (SVG only under MEDIA_CSP). */
export const INERT_TYPES: Readonly<Record<string, string>> = Object.freeze({
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.bmp': 'image/bmp',
  '.ico': 'image/x-icon',
  '.svg': 'image/svg+xml',
  '.webm': 'video/webm',
  '.mp4': 'video/mp4',
  '.m4v': 'video/mp4',
  '.mov': 'video/quicktime',
  '.mkv': 'video/x-matroska',
  '.ogv': 'video/ogg',
  '.mp3': 'audio/mpeg',
  '.wav': 'audio/wav',
  '.ogg': 'audio/ogg',
  '.oga': 'audio/ogg',
  '.opus': 'audio/ogg',
  '.m4a': 'audio/mp4',
  '.aac': 'audio/aac',
  '.flac': 'audio/flac',
  '.txt': 'text/plain; charset=utf-8',
  '.vtt': 'text/vtt; charset=utf-8',
});

/** Headers `send` sets for a file, removed again when an error answer (JSON) replaces it. */
const FILE_HEADERS = ['Content-Type', 'Content-Length', 'Content-Range', 'ETag', 'Last-Modified', 'Accept-Ranges', 'Cache-Control', 'Content-Security-Policy', 'Content-Disposition'];

export function mediaRoutes(api: Api, { store }: AppDeps): void {
  api.route({
    method: 'get',
    path: '/api/media/:projectId/:file',
    operationId: 'getMedia',
    summary: 'A media file of a project',
    description:
      "The file `projects/<project_id>/media/<file>` of the engine store. `Range: bytes=…` (one range) answers 206 with `Content-Range`; an unsatisfiable range 416 with `Content-Range: bytes */<size>`. `If-None-Match` / `If-Modified-Since` answer 304. Every answer is inert in this origin: images (png, jpeg, gif, webp, avif, bmp, ico, svg), video (webm, mp4, m4v, mov, mkv, ogv), audio (mp3, wav, ogg, oga, opus, m4a, aac, flac) and plain text (txt, vtt) are served as their type; any other file (HTML, XML, scripts, style sheets, PDF…) as `application/octet-stream` with `Content-Disposition: attachment`; all with `X-Content-Type-Options: nosniff` and `Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline'; sandbox`.",
    tag: 'Engine',
    params: z.object({ projectId: PathId('Project id'), file: PathId('File name inside the project’s `media/` folder') }),
    answers: {
      200: {
        description:
          'The file; `Content-Type` from its extension for the inert types (image/png, image/svg+xml, video/webm, video/mp4, audio/mpeg, text/plain…), else `application/octet-stream` as an attachment.',
        contentType: '*/*',
        schema: z.string().meta({ format: 'binary' }),
        headers: {
          ETag: 'Weak validator from size and modification time.',
          'Last-Modified': 'Modification time.',
          'Accept-Ranges': '`bytes`',
          'Content-Security-Policy': "`default-src 'none'; style-src 'unsafe-inline'; sandbox`: nothing runs when the file is opened as a document.",
        },
      },
      206: {
        description: 'The requested byte range.',
        contentType: '*/*',
        schema: z.string().meta({ format: 'binary' }),
        headers: { 'Content-Range': '`bytes <first>-<last>/<size>`' },
      },
      304: { description: 'Not modified.' },
      400: { description: 'Malformed project id or file name.', schema: ErrorBody },
      404: {
        description:
          '`no media file <file> in project <project_id>`: no such file, or not one that is served: a symbolic link leading outside the project’s `media/` folder, or not a regular file (a named pipe, a socket, a device, a folder).',
        schema: ErrorBody,
      },
      412: { description: 'An If-Match / If-Unmodified-Since precondition failed.', schema: ErrorBody },
      416: { description: 'Range not satisfiable.', schema: ErrorBody, headers: { 'Content-Range': '`bytes */<size>`' } },
    },
    handler: async ({ res, params }) => {
      const projectId = checkId('project_id', params.projectId);
      const file = checkId('file', params.file);
      const within = `projects/${projectId}/media`;
      const opened = await openStoreFile(store.access, `${within}/${file}`, within);
      // Absent, or not a file this route serves: the same 404, naming nothing beyond the file.
      if (opened.kind !== 'ok') throw new HttpError('media_not_found', `no media file ${file} in project ${projectId}`);
      const { handle, stats, path: reopen } = opened.value;
      try {
        res.setHeader('X-Content-Type-Options', 'nosniff');
        res.setHeader('Content-Security-Policy', MEDIA_CSP);
        // `send` takes the type from the extension of the path it is given, which is not the
        // file's name; only inert types are served as themselves.
        const inert = INERT_TYPES[path.extname(file).toLowerCase()];
        if (inert !== undefined) res.setHeader('Content-Type', inert);
        else {
          // attachment() sets a type from the extension too: the generic type is set after it.
          res.attachment(file);
          res.setHeader('Content-Type', 'application/octet-stream');
        }
        // The app turns generated ETags off, which res.sendFile follows: set the one `send` would compute.
        res.setHeader('ETag', `W/"${stats.size.toString(16)}-${stats.mtime.getTime().toString(16)}"`);
        await sendFile(res, file, reopen, stats.size);
      } finally {
        await handle.close();
      }
    },
  });
}

/** res.sendFile as a promise, its errors the catalogue's. @param file the name, for messages. @param at a path that opens it. */
function sendFile(res: Response, file: string, at: string, size: number): Promise<void> {
  return new Promise((resolve, reject) => {
    res.sendFile(at, { dotfiles: 'deny', lastModified: true, acceptRanges: true, maxAge: 0 }, (err?: Error) => {
      // No error, or the client went away mid-body: nothing more to answer.
      if (!err || res.headersSent) return resolve();
      for (const h of FILE_HEADERS) res.removeHeader(h);
      const status = (err as { status?: number; statusCode?: number }).status ?? (err as { statusCode?: number }).statusCode;
      const cause = { cause: err };
      if (status === 416) reject(withCause(new RangeNotSatisfiableError(size), err));
      else if (status === 412) reject(new HttpError('precondition_failed', 'precondition failed', cause));
      else if (status === 404 || (err as NodeJS.ErrnoException).code === 'ENOENT') reject(new HttpError('media_not_found', `no media file ${file}`, cause));
      else if (status === 403) reject(new HttpError('media_forbidden', 'forbidden', cause));
      else reject(err);
    });
  });
}

function withCause<E extends Error>(err: E, cause: unknown): E {
  err.cause = cause;
  return err;
}
