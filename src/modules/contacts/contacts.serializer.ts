import type { ContactView } from './contacts.repo.ts';

/** The spec's Contact (camelCase). */
export function serializeContact(contact: ContactView) {
  return {
    _id: contact.id,
    email: contact.email,
    firstName: contact.firstName,
    lastName: contact.lastName,
    company: contact.company,
    tags: contact.tags,
    customFields: contact.customFields,
    status: contact.status,
    createdAt: contact.createdAt.toISOString(),
    updatedAt: contact.updatedAt.toISOString(),
  };
}
