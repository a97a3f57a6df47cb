#ifndef PASSWORD_SCHEME_H
#define PASSWORD_SCHEME_H
/* Verifying a plaintext password against a stored one in Dovecot's
   "{SCHEME}data" notation. Supported schemes:
     {PLAIN}, {CLEAR}            the password itself
     {CRYPT}                     any crypt(3) hash libxcrypt knows
     {MD5-CRYPT}                 $1$...
     {SHA256-CRYPT}              $5$...
     {SHA512-CRYPT}              $6$...
     {BLF-CRYPT}                 $2a$/$2b$/$2y$ (bcrypt)
     {ARGON2ID}, {ARGON2I}       $argon2id$v=19$m=..,t=..,p=..$salt$hash
                                 (libargon2's encoded form)
     {PBKDF2}                    $1$salt$rounds$hex (Dovecot's form:
                                 PBKDF2-HMAC-SHA1, 20-byte key, the salt
                                 string used as is)
     {SSHA256}, {SSHA512}        base64(H(password salt) salt)
     {SCRAM-SHA-256}, {SCRAM-SHA-1}
                                 iterations,b64(salt),b64(StoredKey),
                                 b64(ServerKey) (Dovecot's form; usable by
                                 the SCRAM mechanisms without the password)
   A stored value without a {SCHEME} prefix uses the caller's default
   scheme (passwd-file: CRYPT unless scheme= says otherwise). Results are
   compared in constant time; passwords are never logged. */

/* Longest plaintext we hash: bounds the work one request can cause and
   is far above any real password (bcrypt uses only 72 bytes anyway). */
#define PASSWORD_MAX_LENGTH 1024

/* True if name (without braces, any case) is a supported scheme. */
bool password_scheme_is_known(const char *name);

/* Returns 1 if plain matches stored, 0 if it does not, -1 if stored is
   unusable (unknown scheme, malformed hash): *error_r says why, without
   the password or the hash. default_scheme applies when stored has no
   {SCHEME} prefix. */
int password_verify(const char *plain, const char *stored,
		    const char *default_scheme, const char **error_r);

/* Split stored into its scheme's canonical upper-case name ({CLEAR} gives
   "PLAIN") and its data. -1 on an unknown scheme. For the mechanisms that
   need more than a yes/no (SCRAM, CRAM-MD5). */
int password_split_scheme(const char *stored, const char *default_scheme,
			  const char **scheme_r, const char **data_r);

#endif
