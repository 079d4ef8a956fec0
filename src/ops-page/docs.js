// Starts Swagger UI on the service's own OpenAPI document. A separate file:
// the page's Content-Security-Policy allows no inline script.
/* global SwaggerUIBundle */
SwaggerUIBundle({
  url: '/api/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  // Requests made with "Try it out" carry the ops page's token, when it has one.
  requestInterceptor: (req) => {
    const token = sessionStorage.getItem('console-api-token');
    if (token && !req.headers.Authorization) req.headers.Authorization = `Bearer ${token}`;
    return req;
  },
  // No call to an outside validator: the page works without a network.
  validatorUrl: null,
});
