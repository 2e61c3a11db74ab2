import express, { type Response } from 'express';
import request from 'supertest';
import { installHeadHooks, onResponseHead, type HeadHook } from '../../src/http/response-head-hook';

/** A hook that records each call and stamps the status it saw into a header. */
function recordingHook(): HeadHook & { readonly seen: number[] } {
  const seen: number[] = [];
  return {
    seen,
    beforeHead(res: Response) {
      seen.push(res.statusCode);
      res.setHeader('x-seen-status', String(res.statusCode));
    },
  };
}

function appWith(route: (res: Response, hook: HeadHook) => void, install = true): { app: express.Express; hooks: ReturnType<typeof recordingHook>[] } {
  const app = express();
  if (install) installHeadHooks(app);
  const hooks: ReturnType<typeof recordingHook>[] = [];
  app.get('/', (_req, res) => {
    const hook = recordingHook();
    hooks.push(hook);
    route(res, hook);
  });
  app.use((error: Error, _req: express.Request, res: Response, _next: express.NextFunction) => {
    res.status(500).type('text/plain').send(error.message);
  });
  return { app, hooks };
}

describe('onResponseHead', () => {
  test.each([
    ['res.json', (res: Response) => res.status(415).json({ no: true })],
    ['res.end without writeHead', (res: Response) => {
      res.statusCode = 406;
      res.end('no');
    }],
    ['an explicit writeHead with a status', (res: Response) => res.writeHead(413).end()],
    ['a streamed body', (res: Response) => {
      res.status(400);
      res.write('a');
      res.end('b');
    }],
  ])('runs once, before the head, with the final status, when the answer is written by %s', async (_name, write) => {
    const { app, hooks } = appWith((res, hook) => {
      onResponseHead(res, hook);
      write(res);
    });
    const answer = await request(app).get('/');
    expect(hooks[0]?.seen).toEqual([answer.status]);
    // Set inside the hook, so it went out with the head.
    expect(answer.headers['x-seen-status']).toBe(String(answer.status));
  });

  test('still runs when a step wrapped this response own writeHead after the hook was set', async () => {
    const { app, hooks } = appWith((res, hook) => {
      onResponseHead(res, hook);
      const own = res.writeHead;
      res.writeHead = function wrapped(this: Response, ...args: Parameters<typeof own>) {
        res.setHeader('x-wrapped', '1');
        return own.apply(this, args);
      } as typeof own;
      res.status(400).json({});
    });
    const answer = await request(app).get('/');
    expect(hooks[0]?.seen).toEqual([400]);
    expect(answer.headers['x-wrapped']).toBe('1');
  });

  test('a response with no hook set is written as usual', async () => {
    const { app } = appWith((res) => res.status(201).json({ ok: true }));
    const answer = await request(app).get('/');
    expect(answer.status).toBe(201);
    expect(answer.headers['x-seen-status']).toBeUndefined();
  });

  test('refuses loudly on an app without installHeadHooks, where the hook could never run', async () => {
    const { app } = appWith((res, hook) => onResponseHead(res, hook), false);
    const answer = await request(app).get('/');
    expect(answer.status).toBe(500);
    expect(answer.text).toMatch(/installHeadHooks/);
  });

  test('refuses a second hook on the same response', async () => {
    const { app } = appWith((res, hook) => {
      onResponseHead(res, hook);
      onResponseHead(res, recordingHook());
    });
    const answer = await request(app).get('/');
    expect(answer.status).toBe(500);
    expect(answer.text).toMatch(/already has a head hook/);
  });
});
