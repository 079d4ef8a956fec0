export { isServiceError, SERVICE_ERROR, ServiceError, type ServiceErrorLike, type ServiceErrorOptions } from './service-error.js';
