import type { App } from 'firebase-admin/app';
import type { Config } from '../config/config';
import type { LimitOverrideStore } from './limit-override-record';

/**
 * Overrides live where the tokens are: a file beside TOKENS_FILE on the
 * embedded default, the `limitOverrides` collection with TOKEN_STORE=firestore.
 */
export async function createOverrideStore(config: { readonly tokens: Pick<Config['tokens'], 'store' | 'overridesFile'> }, options: { readonly app?: App; readonly collection?: string } = {}): Promise<LimitOverrideStore> {
  if (config.tokens.store === 'file') {
    const { FileOverrideStore } = await import('./file-override-store');
    return new FileOverrideStore(config.tokens.overridesFile);
  }
  if (options.app === undefined) throw new TypeError('createOverrideStore: TOKEN_STORE=firestore needs a firebase-admin App (options.app)');
  const [{ getFirestore }, { FirestoreOverrideStore }] = await Promise.all([import('firebase-admin/firestore'), import('./firestore-override-store')]);
  return new FirestoreOverrideStore(getFirestore(options.app), options.collection);
}
