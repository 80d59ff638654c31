// OpenSSL's objects owned, one alias per type, for the HTTP server's TLS
// (http/) and the OTLP exporter's (output/otlp/) alike: each freed by
// OpenSSL's own function, none by hand. Included only by code that links
// OpenSSL (the exporter modules), never by the binary's own.
#pragma once

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "common/unique_handle.h"

namespace funclatency {

using OwnedBio = UniqueHandle<BIO, BIO_free>;
using OwnedCertificate = UniqueHandle<X509, X509_free>;
using OwnedKey = UniqueHandle<EVP_PKEY, EVP_PKEY_free>;
using OwnedGeneralNames = UniqueHandle<GENERAL_NAMES, GENERAL_NAMES_free>;
using OwnedSsl = UniqueHandle<SSL, SSL_free>;
using OwnedSslContext = UniqueHandle<SSL_CTX, SSL_CTX_free>;

}  // namespace funclatency
