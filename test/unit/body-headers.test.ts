import { bodyEncodingProblem, declaredLengthProblem, isJsonContentType, parseMediaType } from '../../src/http/body-headers';

describe('declaredLengthProblem', () => {
  test.each([
    ['no Content-Length (chunked)', undefined, undefined],
    ['at the limit', '1024', undefined],
    ['one byte over', '1025', { problem: 'declared_too_large', declaredBytes: 1025, maxBodyBytes: 1024 }],
    ['50 MB', '50000000', { problem: 'declared_too_large', declaredBytes: 50_000_000, maxBodyBytes: 1024 }],
  ])('%s', (_label, contentLength, expected) => {
    expect(declaredLengthProblem({ 'content-length': contentLength }, 1024)).toEqual(expected);
  });
});

describe('bodyEncodingProblem', () => {
  test.each([
    ['application/json', { 'content-type': 'application/json' }, undefined],
    ['with charset=utf-8, any case, quoted', { 'content-type': 'Application/JSON; charset="UTF-8"' }, undefined],
    ['with utf8 spelt without the dash', { 'content-type': 'application/json;charset=utf8' }, undefined],
    ['identity encoding', { 'content-type': 'application/json', 'content-encoding': 'identity' }, undefined],
    ['no Content-Type', {}, { problem: 'not_json', contentType: undefined }],
    ['text/plain', { 'content-type': 'text/plain' }, { problem: 'not_json', contentType: 'text/plain' }],
    ['a substring trick', { 'content-type': 'text/plain; a=application/json' }, { problem: 'not_json', contentType: 'text/plain; a=application/json' }],
    ['latin1', { 'content-type': 'application/json; charset=iso-8859-1' }, { problem: 'unsupported_charset', charset: 'iso-8859-1' }],
    ['utf-16', { 'content-type': 'application/json; charset=utf-16' }, { problem: 'unsupported_charset', charset: 'utf-16' }],
    ['gzip', { 'content-type': 'application/json', 'content-encoding': 'gzip' }, { problem: 'unsupported_encoding', contentEncoding: 'gzip' }],
    ['deflate, br', { 'content-type': 'application/json', 'content-encoding': 'deflate, br' }, { problem: 'unsupported_encoding', contentEncoding: 'deflate, br' }],
  ])('%s', (_label, headers, expected) => {
    expect(bodyEncodingProblem(headers)).toEqual(expected);
  });
});

describe('parseMediaType', () => {
  test('tolerates a stray semicolon, as the SDK does', () => {
    expect(isJsonContentType('application/json;')).toBe(true);
    expect(parseMediaType('application/json; ; charset=utf-8')?.parameters.get('charset')).toBe('utf-8');
  });
  test('refuses what is not type/subtype', () => {
    expect(parseMediaType('json')).toBeUndefined();
    expect(parseMediaType('')).toBeUndefined();
  });
});
