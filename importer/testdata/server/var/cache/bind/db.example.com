$TTL 3600
$ORIGIN example.com.
@	IN SOA ns1 hostmaster ( 2024010101 7200 900 1209600 300 )
	IN NS ns1
	IN NS ns2.example.net.
	IN MX 10 mail
ns1	IN A 192.0.2.1
mail 300 IN A 192.0.2.2
www	IN CNAME @
_sip._tcp IN SRV 10 60 5060 sip
sip	IN A 192.0.2.3
txt	IN TXT "hello world" "second string"
hinfo	IN HINFO "PC" "Linux"
caa	IN CAA 0 issue "letsencrypt.org"
sub	IN NS ns.sub
ns.sub	IN A 192.0.2.4
$GENERATE 1-10 host$ IN A 198.51.100.$
$INCLUDE db.example.com.inc
