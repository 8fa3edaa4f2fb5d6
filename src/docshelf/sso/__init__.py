"""Single sign-on: SAML providers (the /v1 operations) and the service provider behind them
(the browser endpoints under /sso: start, assertion consumer, session, token)."""
