// GitBook's official API client (@gitbook/api, from the npm registry) driving a Docshelf
// server: the calls a GitBook integration makes on a new organization. Prints one JSON object
// of what it saw; any refused call throws (exit status 1) with the server's message.
// Env: DOCSHELF (the server), ADMIN_TOKEN, MEMBER_TOKEN, CLIENT (the installed package's dir).
import { createRequire } from "node:module";

const require = createRequire(`${process.env.CLIENT}/`);
const { GitBookAPI } = require("@gitbook/api");

const endpoint = process.env.DOCSHELF;
const admin = new GitBookAPI({ endpoint, authToken: process.env.ADMIN_TOKEN });
const member = new GitBookAPI({ endpoint, authToken: process.env.MEMBER_TOKEN });
const anonymous = new GitBookAPI({ endpoint });

const { data: orgs } = await admin.orgs.listOrganizationsForAuthenticatedUser();
const org = orgs.items[0].id;
// A space as the client creates one: no visibility, no default level.
const { data: space } = await admin.orgs.createSpace(org, { title: "From the client" });
const { data: invite } = await admin.orgs.createOrganizationInvite(org, { role: "edit" });
await member.orgs.joinOrganizationWithInvite(org, invite.id);
const { data: memberSpaces } = await member.orgs.listSpacesInOrganizationById(org);
const { data: seen } = await member.spaces.getSpaceById(space.id);
const { data: site } = await admin.orgs.createSite(org, {
  title: "From the client",
  visibility: "public",
  spaces: [space.id],
});
const { data: published } = await admin.orgs.publishSite(org, site.id);
const { data: found } = await anonymous.urls.getPublishedContentByUrl({
  url: published.urls.published,
});
const { data: resolved } = await anonymous.urls.resolvePublishedContentByUrl({
  url: published.urls.published,
  visitor: {},
});
console.log(
  JSON.stringify({
    space: { id: space.id, visibility: space.visibility, defaultLevel: space.defaultLevel },
    memberSpaces: memberSpaces.items.map((s) => s.id),
    memberCanEdit: seen.permissions.edit,
    published: published.urls.published,
    found: { space: found.space, site: found.site },
    resolved: { space: resolved.space, site: resolved.site },
  }),
);
