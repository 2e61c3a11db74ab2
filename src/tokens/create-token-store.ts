import type { App } from 'firebase-admin/app';
import type { Config } from '../config/config';
import type { Logger } from '../shared/logger';
import type { TokenStore } from './token-record';

export interface CreateTokenStoreOptions {
  /** Required when `config.tokens.store` is 'firestore'; its owner deletes it on shutdown. */
  readonly app?: App;
  /** Firestore collection; default 'apiTokens'. For tests sharing one emulator. */
  readonly collection?: string;
  /** The file store reports an unreadable file here (path and reason, once per problem). Default: silent. */
  readonly logger?: Logger;
}

/**
 * The one place a token store is chosen, from `TOKEN_STORE`. Firestore is
 * loaded only when chosen: its gRPC stack costs startup time the embedded
 * default and the CLI's file mode need not pay.
 */
export async function createTokenStore(config: { readonly tokens: Pick<Config['tokens'], 'store' | 'file'> & Partial<Config['tokens']> }, options: CreateTokenStoreOptions = {}): Promise<TokenStore> {
  switch (config.tokens.store) {
    case 'file': {
      const { FileTokenStore } = await import('./file-token-store');
      return new FileTokenStore({ path: config.tokens.file, logger: options.logger });
    }
    case 'firestore': {
      if (options.app === undefined) {
        throw new TypeError("createTokenStore: TOKEN_STORE=firestore needs a firebase-admin App (options.app)");
      }
      const [{ getFirestore }, { FirestoreTokenStore }] = await Promise.all([
        import('firebase-admin/firestore'),
        import('./firestore-token-store'),
      ]);
      return new FirestoreTokenStore({ firestore: getFirestore(options.app), collection: options.collection });
    }
    default:
      throw new TypeError(`createTokenStore: unknown token store ${JSON.stringify(config.tokens.store)}`);
  }
}
