#ifndef LOGIN_ID_H
#define LOGIN_ID_H
/* Validation of the ID command's argument (RFC 2971 3.3):
   "ID" SP ( "(" field SP value *( SP field SP value ) ")" / NIL ).
   The bounds are the RFC's: field names up to 30 octets, values up to
   1024 octets, at most 30 pairs. Pure; unit-tested. */

struct imap_arg;

#define LOGIN_ID_MAX_PAIRS 30
#define LOGIN_ID_MAX_FIELD_LEN 30
#define LOGIN_ID_MAX_VALUE_LEN 1024

/* args: the command's arguments (after "ID"), ending in EOL. Returns 0,
   or -1 with a client-facing *error_r. */
int login_id_args_validate(const struct imap_arg *args, const char **error_r);

/* The value of field name (case-insensitive) in validated ID args, or
   NULL if absent or NIL. */
const char *login_id_get_field(const struct imap_arg *args, const char *name);

#endif
