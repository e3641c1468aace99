package jobspec

import (
	"github.com/hashicorp/hcl/v2"

	"github.com/droverhq/drover/structs"
)

var (
	volumeSchema = &schema{
		attrs:       []string{"type", "source", "read_only", "sticky", "access_mode", "attachment_mode", "per_alloc"},
		unsupported: []string{"mount_options"},
	}
	volumeMountSchema = &schema{
		attrs: []string{"volume", "destination", "read_only", "propagation_mode", "selinux_label"},
	}
	ephemeralDiskSchema = &schema{attrs: []string{"size", "sticky", "migrate"}}
	disconnectSchema    = &schema{attrs: []string{"lost_after", "stop_on_client_after", "replace", "reconcile"}}
)

// groupVolumes decodes a group's volume blocks, ephemeral_disk,
// max_client_disconnect and disconnect.
func (d *decoder) groupVolumes(c *hcl.BodyContent, tg *structs.TaskGroup) {
	for _, b := range c.Blocks {
		if b.Type != "volume" {
			continue
		}
		name := b.Labels[0]
		if _, dup := tg.Volumes[name]; dup {
			d.errorf(b.LabelRanges[0], "Duplicate volume", "A volume named %q is already defined in group %q.", name, tg.Name)
			continue
		}
		if tg.Volumes == nil {
			tg.Volumes = map[string]*structs.VolumeRequest{}
		}
		tg.Volumes[name] = d.volume(b)
	}
	if b := d.single(c, "ephemeral_disk"); b != nil {
		tg.EphemeralDisk = d.ephemeralDisk(b)
	}
	if a := c.Attributes["max_client_disconnect"]; a != nil {
		if v, ok := d.duration(a); ok {
			tg.MaxClientDisconnect = &v
		}
	}
	if b := d.single(c, "disconnect"); b != nil {
		tg.Disconnect = d.disconnect(b)
	}
}

// volume decodes one volume block; problems are reported at it.
func (d *decoder) volume(b *hcl.Block) *structs.VolumeRequest {
	v := &structs.VolumeRequest{Name: b.Labels[0]}
	before := len(d.diags)
	c := d.content(b.Body, volumeSchema)
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "type":
			v.Type, _ = d.str(a)
		case "source":
			v.Source, _ = d.str(a)
		case "read_only":
			v.ReadOnly, _ = d.boolean(a)
		case "sticky":
			v.Sticky, _ = d.boolean(a)
		case "access_mode":
			v.AccessMode, _ = d.str(a)
		case "attachment_mode":
			v.AttachmentMode, _ = d.str(a)
		case "per_alloc":
			v.PerAlloc, _ = d.boolean(a)
		}
	}
	if len(d.diags) == before {
		d.checkBlock(b, "Invalid volume block", v.Validate(v.Name))
	}
	return v
}

// volumeMounts decodes a task's volume_mount blocks. They are checked
// against the group's volumes when the job is validated.
func (d *decoder) volumeMounts(c *hcl.BodyContent, t *structs.Task) {
	for _, b := range c.Blocks {
		if b.Type != "volume_mount" {
			continue
		}
		m := &structs.VolumeMount{PropagationMode: structs.VolumeMountPropagationPrivate}
		vc := d.content(b.Body, volumeMountSchema)
		for _, a := range sortedAttrs(vc.Attributes) {
			switch a.Name {
			case "volume":
				m.Volume, _ = d.str(a)
			case "destination":
				m.Destination, _ = d.str(a)
			case "read_only":
				m.ReadOnly, _ = d.boolean(a)
			case "propagation_mode":
				m.PropagationMode = d.oneOf(a, []string{structs.VolumeMountPropagationPrivate, structs.VolumeMountPropagationHostToTask, structs.VolumeMountPropagationBidirectional})
			case "selinux_label":
				m.SELinuxLabel, _ = d.str(a)
			}
		}
		for _, req := range []string{"volume", "destination"} {
			if vc.Attributes[req] == nil {
				d.errorf(b.DefRange, "Missing required argument", "The argument %q is required in a volume_mount block.", req)
			}
		}
		t.VolumeMounts = append(t.VolumeMounts, m)
	}
}

// ephemeralDisk decodes an ephemeral_disk block over the default (size
// in MB).
func (d *decoder) ephemeralDisk(b *hcl.Block) *structs.EphemeralDisk {
	e := structs.DefaultEphemeralDisk()
	before := len(d.diags)
	c := d.content(b.Body, ephemeralDiskSchema)
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "size":
			if n, ok := d.integer(a, structs.EphemeralDiskMinMB, structs.EphemeralDiskMaxMB); ok {
				e.SizeMB = int(n)
			}
		case "sticky":
			e.Sticky, _ = d.boolean(a)
		case "migrate":
			e.Migrate, _ = d.boolean(a)
		}
	}
	if len(d.diags) == before {
		d.checkBlock(b, "Invalid ephemeral_disk block", e.Validate())
	}
	return e
}

// disconnect decodes a disconnect block.
func (d *decoder) disconnect(b *hcl.Block) *structs.DisconnectStrategy {
	ds := &structs.DisconnectStrategy{}
	c := d.content(b.Body, disconnectSchema)
	for _, a := range sortedAttrs(c.Attributes) {
		switch a.Name {
		case "lost_after":
			ds.LostAfter, _ = d.duration(a)
		case "stop_on_client_after":
			if v, ok := d.duration(a); ok {
				ds.StopOnClientAfter = &v
			}
		case "replace":
			if v, ok := d.boolean(a); ok {
				ds.Replace = &v
			}
		case "reconcile":
			ds.Reconcile = d.oneOf(a, []string{structs.ReconcileOptionKeepOriginal, structs.ReconcileOptionKeepReplacement, structs.ReconcileOptionBestScore, structs.ReconcileOptionLongestRunning})
		}
	}
	ds.Canonicalize()
	return ds
}
