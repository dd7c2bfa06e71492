// Loaded with node --import before the MCP conformance suite: its bundle
// imports fs.globSync, which Node has only from 22 on, for its tier-check
// command alone; the server scenarios never call it. Under an older Node
// the suite's fs import gets fs as it is plus a globSync that says why it
// is missing, so the suite loads; under Node 22 it gets the real one.
import { register } from 'node:module';

const fsWithGlob = `
import fs from 'node:fs';
export * from 'node:fs';
export default fs;
export const globSync = fs.globSync ?? (() => { throw new Error('fs.globSync needs Node 22 or later'); });
`;

register('data:text/javascript,' + encodeURIComponent(`
export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && (context.parentURL || '').includes('/@modelcontextprotocol/conformance/')) {
    return { url: 'data:text/javascript,' + encodeURIComponent(${JSON.stringify(fsWithGlob)}), shortCircuit: true };
  }
  return next(specifier, context);
}
`));
