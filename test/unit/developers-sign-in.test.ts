import { loadConfig } from '../../src/config/config';
import { renderDevelopersPage } from '../../src/developers/developers-page';

const issuersFile = JSON.stringify({
  resource: 'https://mcp.example.com/mcp',
  issuers: [{ issuer: 'https://idp.example.com', scope: 'mcp' }, { preset: 'firebase', projectId: 'my-project' }],
});

describe('/developers: how to authenticate', () => {
  it('without issuers, says to send a flk_ token and that there is no OAuth sign-in', () => {
    const page = renderDevelopersPage(loadConfig({}), { baseUrl: 'https://svc.example' });
    expect(page).toContain('<h2 id="sign-in">How to authenticate</h2>');
    expect(page).toContain('This deployment runs no OAuth sign-in');
    expect(page).not.toContain('Limits follow the signed-in user');
  });

  it('with issuers, names both ways, each issuer and audience, the metadata URL, and that limits follow the user', () => {
    const config = loadConfig({ AUTH_ISSUERS_FILE: 'issuers.json' }, { cwd: '/x', readFile: () => issuersFile });
    const page = renderDevelopersPage(config, { baseUrl: 'https://svc.example' });
    expect(page).toContain('<code>flk_...</code>');
    expect(page).toContain('OAuth access tokens from <code>https://idp.example.com</code> for the resource <code>https://mcp.example.com/mcp</code> with the scope <code>mcp</code>');
    expect(page).toContain('Firebase Authentication ID tokens of the project <code>my-project</code>');
    expect(page).toContain('<code>https://mcp.example.com/.well-known/oauth-protected-resource/mcp</code>');
    expect(page).toContain('Limits follow the signed-in user');
    expect(page).toContain('<a href="#sign-in">Authenticating</a>');
  });
});
